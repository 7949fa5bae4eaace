#include "server/request_parse.h"

#include <limits>
#include <utility>

#include <fmt/format.h>

#include "server/json_fields.h"
#include "tokenizer/utf8.h"

namespace kvengine::server {
namespace {

using nlohmann::json;

constexpr int64_t kMaxTokensLimit = int64_t{1} << 31;
constexpr size_t kMaxTextBytes = size_t{1} << 30;  // The body limit is the real bound.

// The first word of a SamplingParams::Validate message is the field it names.
ApiError SamplingError(const Status& s) {
  const std::string& m = s.message();
  return BadRequest(m.substr(0, m.find(' ')), m);
}

// prompt: "text" | [ids...] | ["text"] | [[ids...]].
void ParsePrompt(JsonFields& f, GenerationRequest* out) {
  const json* p = f.Find("prompt");
  if (p == nullptr) {
    f.Fail("prompt", "prompt is required");
    return;
  }
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
    p = &(*p)[0];  // A batch of one prompt.
  }
  if (p->is_string()) {
    out->prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array()) {
    f.Fail("prompt", fmt::format("prompt must be a string or an array of token ids, got {}",
                                 JsonTypeName(*p)));
    return;
  }
  out->prompt_is_ids = true;
  for (size_t i = 0; i < p->size(); ++i) {
    const json& id = (*p)[i];
    if (id.is_string() || id.is_array()) {
      f.Fail("prompt", "only one prompt per request is supported");
      return;
    }
    if (!id.is_number_integer()) {  // Unsigned ints are integers too.
      f.Fail("prompt", fmt::format("prompt[{}] must be a token id (an integer), got {}", i,
                                   JsonTypeName(id)));
      return;
    }
    const bool negative = !id.is_number_unsigned() && id.get<int64_t>() < 0;
    if (negative || id.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())) {
      f.Fail("prompt", fmt::format("prompt[{}] = {} is not a token id", i, id.dump()));
      return;
    }
    out->prompt_ids.push_back(id.get<int64_t>());
  }
}

// content: "text" | [{"type": "text", "text": "..."}...] | null.
void ParseContent(JsonFields& f, const json& c, const std::string& param, std::string* out) {
  if (c.is_null()) return;
  if (c.is_string()) {
    *out = c.get<std::string>();
    return;
  }
  if (!c.is_array()) {
    f.Fail(param, fmt::format("{} must be a string or an array of text parts, got {}", param,
                              JsonTypeName(c)));
    return;
  }
  for (size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    auto type = part.is_object() ? part.find("type") : part.end();
    auto text = part.is_object() ? part.find("text") : part.end();
    if (type == part.end() || !type->is_string() || *type != "text" || text == part.end() ||
        !text->is_string()) {
      f.Fail(param, fmt::format("{}[{}] must be {{\"type\": \"text\", \"text\": \"...\"}} "
                                "(only text content is supported)",
                                param, i));
      return;
    }
    *out += text->get<std::string>();
  }
}

void ParseMessages(JsonFields& f, GenerationRequest* out) {
  const json* m = f.Find("messages");
  if (m == nullptr) {
    f.Fail("messages", "messages is required");
    return;
  }
  if (!m->is_array() || m->empty()) {
    f.Fail("messages", "messages must be a non-empty array of {role, content} objects");
    return;
  }
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string param = fmt::format("messages[{}]", i);
    if (!msg.is_object()) {
      f.Fail(param, param + " must be an object with role and content");
      return;
    }
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) {
      f.Fail(param + ".role", param + ".role must be a string");
      return;
    }
    ChatMessage cm;
    const std::string& r = role->get_ref<const std::string&>();
    if (r == "system" || r == "developer") {
      cm.role = ChatRole::kSystem;
    } else if (r == "user") {
      cm.role = ChatRole::kUser;
    } else if (r == "assistant") {
      cm.role = ChatRole::kAssistant;
    } else {
      f.Fail(param + ".role", fmt::format("{}.role '{}' is not supported (system, developer, "
                                          "user, assistant)",
                                          param, r));
      return;
    }
    auto content = msg.find("content");
    if (content != msg.end()) ParseContent(f, *content, param + ".content", &cm.content);
    out->messages.push_back(std::move(cm));
  }
}

void ParseStop(JsonFields& f, const ParseLimits& limits, GenerationRequest* out) {
  const json* s = f.Find("stop");
  if (s == nullptr) return;
  std::vector<const json*> items;
  if (s->is_string()) {
    items.push_back(s);
  } else if (s->is_array()) {
    for (const json& e : *s) items.push_back(&e);
  } else {
    f.Fail("stop",
           fmt::format("stop must be a string or an array of strings, got {}", JsonTypeName(*s)));
    return;
  }
  if (items.size() > size_t(limits.max_stop)) {
    f.Fail("stop", fmt::format("stop has {} strings; at most {} are allowed", items.size(),
                               limits.max_stop));
    return;
  }
  for (const json* e : items) {
    if (!e->is_string()) {
      f.Fail("stop", fmt::format("stop entries must be strings, got {}", JsonTypeName(*e)));
      return;
    }
    const std::string& v = e->get_ref<const std::string&>();
    if (v.size() > limits.max_stop_bytes) {
      f.Fail("stop", fmt::format("stop strings may be at most {} bytes", limits.max_stop_bytes));
      return;
    }
    if (!v.empty()) out->stop.push_back(v);
  }
}

void ParseStopTokenIds(JsonFields& f, const ParseLimits& limits, GenerationRequest* out) {
  const json* s = f.Find("stop_token_ids");
  if (s == nullptr) return;
  if (!s->is_array() || s->size() > size_t(limits.max_stop_token_ids)) {
    f.Fail("stop_token_ids", fmt::format("stop_token_ids must be an array of at most {} token "
                                         "ids",
                                         limits.max_stop_token_ids));
    return;
  }
  for (const json& e : *s) {
    if (!e.is_number_integer() || (!e.is_number_unsigned() && e.get<int64_t>() < 0) ||
        e.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())) {
      f.Fail("stop_token_ids", "stop_token_ids entries must be token ids");
      return;
    }
    out->stop_token_ids.push_back(e.get<int32_t>());
  }
}

void ParseSampling(JsonFields& f, GenerationRequest* out) {
  SamplingParams& s = out->sampling;
  f.Number("temperature", &s.temperature);
  f.Number("top_p", &s.top_p);
  f.Int("top_k", std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), &s.top_k);
  f.Number("min_p", &s.min_p);
  f.Number("repetition_penalty", &s.repetition_penalty);
  int64_t seed = 0;
  if (f.Find("seed") != nullptr) {
    f.Int("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &seed);
    out->seed_given = true;
    s.seed = static_cast<uint64_t>(seed);
  }
  double presence = 0, frequency = 0;
  f.Number("presence_penalty", &presence);
  f.Number("frequency_penalty", &frequency);
  if (!(presence >= -2 && presence <= 2)) {
    f.Fail("presence_penalty", "presence_penalty must be in [-2, 2]");
  }
  if (!(frequency >= -2 && frequency <= 2)) {
    f.Fail("frequency_penalty", "frequency_penalty must be in [-2, 2]");
  }
  f.Unsupported("presence_penalty", "use repetition_penalty");
  f.Unsupported("frequency_penalty", "use repetition_penalty");
}

}  // namespace

std::optional<ApiError> ParseJsonObject(std::string_view body, json* out) {
  if (!IsValidUtf8(body)) return BadRequest("", "the request body is not valid UTF-8");
  json j = json::parse(body, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return BadRequest("", "the request body is not valid JSON");
  if (!j.is_object()) {
    return BadRequest(
        "", fmt::format("the request body must be a JSON object, got {}", JsonTypeName(j)));
  }
  *out = std::move(j);
  return std::nullopt;
}

std::optional<ApiError> ParseGenerationRequest(Endpoint endpoint, std::string_view body,
                                               const ParseLimits& limits, GenerationRequest* out) {
  json j;
  if (auto err = ParseJsonObject(body, &j)) return err;
  GenerationRequest& r = *out;
  r.endpoint = endpoint;
  JsonFields f(j);
  std::string model;
  f.String("model", kMaxTextBytes, &model);
  if (endpoint == Endpoint::kCompletions) {
    ParsePrompt(f, &r);
    f.Bool("add_special_tokens", &r.add_special_tokens);
    r.top_logprobs = -1;
    f.Int("logprobs", 0, limits.max_logprobs, &r.top_logprobs);
    r.logprobs = r.top_logprobs >= 0;
    if (r.top_logprobs < 0) r.top_logprobs = 0;
    f.Unsupported("echo", "the prompt is not echoed");
    f.Unsupported("suffix", "insertion is not supported");
    int best_of = 1;
    f.Int("best_of", 1, limits.max_n, &best_of);
    if (best_of > 1) f.Fail("best_of", "best_of > 1 is not supported");
  } else {
    ParseMessages(f, &r);
    f.Bool("logprobs", &r.logprobs);
    f.Int("top_logprobs", 0, limits.max_logprobs, &r.top_logprobs);
    if (r.top_logprobs > 0 && !r.logprobs) {
      f.Fail("top_logprobs", "top_logprobs needs logprobs: true");
    }
    f.Unsupported("tools", "tool calls are not supported");
    f.Unsupported("functions", "function calls are not supported");
    if (const json* rf = f.Find("response_format")) {
      auto type = rf->is_object() ? rf->find("type") : rf->end();
      if (type == rf->end() || !type->is_string() || *type != "text") {
        f.Fail("response_format", "only response_format {\"type\": \"text\"} is supported");
      }
    }
  }
  int64_t max_tokens = 0;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (f.Find(name) == nullptr) continue;
    f.Int(name, 1, kMaxTokensLimit, &max_tokens);
    r.max_tokens = max_tokens;
  }
  ParseSampling(f, &r);
  f.Int("n", 1, limits.max_n, &r.n);
  ParseStop(f, limits, &r);
  ParseStopTokenIds(f, limits, &r);
  f.Bool("ignore_eos", &r.ignore_eos);
  f.Bool("return_token_ids", &r.return_token_ids);
  f.Bool("stream", &r.stream);
  if (const json* so = f.Find("stream_options")) {
    if (!so->is_object()) {
      f.Fail("stream_options", "stream_options must be an object");
    } else if (!r.stream) {
      f.Fail("stream_options", "stream_options is only allowed with stream: true");
    } else {
      JsonFields sf(*so, "stream_options.");
      sf.Bool("include_usage", &r.include_usage);
      if (sf.error()) return sf.error();
    }
  }
  f.String("cache_salt", limits.max_salt_bytes, &r.cache_salt);
  std::string user;
  f.String("user", kMaxTextBytes, &user);
  f.Unsupported("logit_bias", "the sampler applies no per-token biases");
  if (f.error()) return f.error();
  Status v = r.sampling.Validate();
  if (!v.ok()) return SamplingError(v);
  return std::nullopt;
}

}  // namespace kvengine::server
