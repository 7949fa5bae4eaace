// Parsing OpenAI-style request bodies (/v1/completions, /v1/chat/completions) into a typed
// GenerationRequest, checking every field's type and range. Nothing here knows the model:
// tokenizing and checking against the context happen in prompt_build.h.
//
// Accepted fields (absent or null = default):
//   model (string, any: one model is served), prompt (completions: a string, an array of token
//   ids, or a one-element array of either), messages (chat: [{role: system|developer|user|
//   assistant, content: string | [{type: "text", text}] | null}]), max_tokens /
//   max_completion_tokens (>= 1; completions default 16, chat default: the rest of the context),
//   temperature [0, 2] (default 1), top_p (0, 1] (default 1), top_k >= -1 (default off), min_p
//   [0, 1] (default off), repetition_penalty > 0 (default 1), seed (int64; default random), n
//   [1, max_n], stop (a string or an array of up to max_stop strings), stop_token_ids, stream,
//   stream_options.include_usage (only with stream), logprobs (completions: integer [0,
//   max_logprobs]; chat: boolean), top_logprobs (chat: [0, max_logprobs], needs logprobs),
//   cache_salt (string), ignore_eos, add_special_tokens (completions; default true), user,
//   return_token_ids (vLLM's extension: the prompt's and each choice's token ids in the
//   response, openai_format.h).
// Rejected when used: echo, best_of > 1, suffix, logit_bias, tools, functions, response_format
// other than text, presence_penalty / frequency_penalty other than 0 (use repetition_penalty).
// Unknown fields are ignored, as OpenAI's API does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/engine.h"
#include "runtime/sampling_params.h"
#include "server/api_error.h"
#include "server/chat_template.h"

namespace kvengine::server {

enum class Endpoint { kCompletions, kChat };

struct ParseLimits {
  int max_n = kMaxChoices;          // Choices per request (the server lowers it to max_num_seqs).
  int max_stop = 16;                // Stop strings per request.
  size_t max_stop_bytes = 256;      // Bytes per stop string.
  int max_logprobs = kMaxLogprobs;  // Top logprobs per token.
  int max_stop_token_ids = 64;
  size_t max_salt_bytes = 256;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  // The prompt: text (completions) or token ids (completions), or messages (chat).
  bool prompt_is_ids = false;
  std::string prompt_text;
  std::vector<int64_t> prompt_ids;  // As sent; checked against the vocabulary later.
  std::vector<ChatMessage> messages;
  bool add_special_tokens = true;

  std::optional<int64_t> max_tokens;  // nullopt: the endpoint's default.
  // API defaults (OpenAI's): temperature 1, every filter off.
  SamplingParams sampling{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
  bool seed_given = false;
  int n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  int top_logprobs = 0;  // Alternatives listed per token (completions: the `logprobs` integer).
  std::string cache_salt;
  bool return_token_ids = false;
};

// Parses a request body. Errors: 400 for invalid UTF-8, malformed JSON, a body that is not an
// object, and any field of the wrong type or out of range (naming it in `param`).
std::optional<ApiError> ParseGenerationRequest(Endpoint endpoint, std::string_view body,
                                               const ParseLimits& limits, GenerationRequest* out);

// Parses a body that must be a JSON object (any endpoint): invalid UTF-8 and malformed JSON are
// 400s. On success *out is an object.
std::optional<ApiError> ParseJsonObject(std::string_view body, nlohmann::json* out);

}  // namespace kvengine::server
