// libFuzzer target: arbitrary bytes through ParseGenerationRequest, the parser of every
// /v1/completions and /v1/chat/completions body the server accepts. The first byte picks the
// endpoint (bit 0) and whether the limits are the server's or tiny ones (bit 1, so that the
// limit checks are reached with short inputs); the rest is the body. A rejected body must give a
// 400 with a message that serializes; an accepted one must satisfy every documented range and
// limit. Any violation traps, which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/request_parse.h"
#include "tokenizer/utf8.h"

namespace kvengine::server {
namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

void CheckAccepted(Endpoint endpoint, const ParseLimits& limits, const GenerationRequest& r) {
  Require(r.endpoint == endpoint);
  if (endpoint == Endpoint::kCompletions) {
    Require(r.messages.empty());
    Require(!r.prompt_is_ids || r.prompt_text.empty());
    Require(r.prompt_is_ids || r.prompt_ids.empty());
    Require(IsValidUtf8(r.prompt_text));
    for (int64_t id : r.prompt_ids) Require(id >= 0);
  } else {
    Require(!r.messages.empty() && !r.prompt_is_ids && r.prompt_ids.empty());
    for (const ChatMessage& m : r.messages) Require(IsValidUtf8(m.content));
  }
  Require(!r.max_tokens.has_value() || *r.max_tokens >= 1);
  Require(r.n >= 1 && r.n <= limits.max_n);
  Require(r.stop.size() <= size_t(limits.max_stop));
  for (const std::string& s : r.stop) Require(s.size() <= limits.max_stop_bytes && IsValidUtf8(s));
  Require(r.stop_token_ids.size() <= size_t(limits.max_stop_token_ids));
  for (int32_t id : r.stop_token_ids) Require(id >= 0);
  Require(r.top_logprobs >= 0 && r.top_logprobs <= limits.max_logprobs);
  Require(r.logprobs || r.top_logprobs == 0);
  Require(!r.include_usage || r.stream);
  Require(r.cache_salt.size() <= limits.max_salt_bytes);
  Require(r.sampling.Validate().ok());
}

}  // namespace
}  // namespace kvengine::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvengine::server;
  if (size == 0) return 0;
  const Endpoint endpoint = (data[0] & 1) ? Endpoint::kChat : Endpoint::kCompletions;
  ParseLimits limits;
  if (data[0] & 2) {
    limits = {.max_n = 2,
              .max_stop = 2,
              .max_stop_bytes = 4,
              .max_logprobs = 2,
              .max_stop_token_ids = 2,
              .max_salt_bytes = 4};
  }
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  GenerationRequest r;
  if (std::optional<ApiError> err = ParseGenerationRequest(endpoint, body, limits, &r)) {
    Require(err->http_status == 400 && !err->message.empty());
    Require(!DumpJson(err->ToJson()).empty());
  } else {
    CheckAccepted(endpoint, limits, r);
  }
  return 0;
}
