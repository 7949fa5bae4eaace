// OpenAI's response objects, built from Generation's deltas, and Server-Sent Events framing.
//
// Non-streamed:  {"id": "cmpl-..", "object": "text_completion", "created", "model",
//                 "choices": [{"index", "text", "logprobs", "finish_reason"}], "usage"}
//                {"id": "chatcmpl-..", "object": "chat.completion", ...
//                 "choices": [{"index", "message": {"role": "assistant", "content"}, "logprobs",
//                 "finish_reason"}], "usage"}
// Streamed, one SSE event per chunk ("data: {json}\n\n"), then "data: [DONE]\n\n":
//                {"object": "text_completion", "choices": [{"index", "text", "logprobs",
//                 "finish_reason"}]}
//                {"object": "chat.completion.chunk", "choices": [{"index", "delta": {"role"
//                 (first chunk of a choice), "content"}, "logprobs", "finish_reason"}]}
//                With stream_options.include_usage every chunk has "usage": null and one last
//                chunk has "choices": [] and the usage.
// return_token_ids (vLLM's extension): completions choices get "prompt_token_ids" (streamed:
//                in a choice's first chunk) and "token_ids" (streamed: the tokens of this chunk);
//                chat choices get "token_ids" and the response (streamed: the first chunk of a
//                choice) "prompt_token_ids".
// usage:         {"prompt_tokens", "completion_tokens", "total_tokens",
//                 "prompt_tokens_details": {"cached_tokens"}}
// logprobs:      completions: {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}],
//                 "text_offset"}; chat: {"content": [{"token", "logprob", "bytes",
//                 "top_logprobs": [{"token", "logprob", "bytes"}]}]}
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/generation.h"
#include "server/request_parse.h"

namespace kvengine::server {

// What every object of one response shares.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;       // "cmpl-<hex>" / "chatcmpl-<hex>"
  int64_t created = 0;  // Unix seconds.
  std::string model;
  bool logprobs = false;                  // Include logprobs objects (else null).
  bool token_ids = false;                 // return_token_ids: add token id arrays (above).
  std::vector<int32_t> prompt_token_ids;  // The prompt as the engine got it (with token_ids).
};

// A fresh response id for the endpoint and the current time.
ResponseMeta NewResponseMeta(Endpoint endpoint, std::string model, bool logprobs);

nlohmann::json UsageJson(const Usage& usage);
nlohmann::json LogprobsJson(Endpoint endpoint, const std::vector<LogprobEntry>& entries);

// The non-streamed body; `choices` hold each choice's whole text, logprobs and finish reason.
nlohmann::json ResponseJson(const ResponseMeta& meta, const std::vector<ChoiceDelta>& choices,
                            const Usage& usage);

// One streamed chunk for `delta`. `first` marks a chat choice's first chunk (adds the role).
nlohmann::json ChunkJson(const ResponseMeta& meta, const ChoiceDelta& delta, bool first,
                         bool include_usage);
// The last chunk when include_usage: "choices": [] and the usage.
nlohmann::json UsageChunkJson(const ResponseMeta& meta, const Usage& usage);

// "data: <json>\n\n"
std::string SseEvent(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// Appends `delta` to `acc` (same choice): text, logprobs, and the finish reason once set.
void AppendDelta(const ChoiceDelta& delta, ChoiceDelta* acc);

}  // namespace kvengine::server
