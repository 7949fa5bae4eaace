// The data of one SSE event of a streamed /v1/completions answer, read the way a load client
// needs it: how many output tokens it carries, their ids when the server returns them
// (return_token_ids), an error, the end marker, and the usage of the final chunk.
//
// The payload is untrusted: it is parsed without exceptions, every field's type is checked, and
// anything unexpected is a kError chunk with a message rather than a crash.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvengine::loadgen {

// An answer's "usage"; -1 where the server left a figure out.
struct UsageInfo {
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens
};

struct CompletionChunk {
  enum class Kind { kData, kDone, kError };
  Kind kind = Kind::kData;
  std::string error;  // kError: the server's message, or what is wrong with the payload.
  // Output tokens in this chunk: the length of choices[0].token_ids when present, else 1 when
  // choices[0].text is non-empty (one chunk per token, as vLLM's benchmark counts), else 0.
  int64_t tokens = 0;
  std::vector<int32_t> token_ids;  // choices[0].token_ids, when present.
  std::optional<UsageInfo> usage;  // The chunk's usage object, when not null.
};

// `data` is one event's data: "[DONE]", {"error": {...}}, or a completion chunk object.
CompletionChunk ParseCompletionChunk(std::string_view data);

}  // namespace kvengine::loadgen
