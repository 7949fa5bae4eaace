// From a parsed request to the engine's RequestParams: renders chat messages through the
// model's ChatTemplate, tokenizes, checks token ids against the vocabulary and the prompt plus
// output against the context, and fills in the endpoint's defaults. Errors are 400s naming the
// field: "prompt"/"messages" (empty, ids outside the vocabulary, too long for the context) or
// "max_tokens" (beyond what the context leaves).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvengine/engine.h"
#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server {

// The model the server serves, as request building needs it.
struct ModelLimits {
  int64_t max_model_len = 0;  // Prompt plus output tokens per sequence.
};

struct BuiltRequest {
  RequestParams params;
  std::vector<std::string> stop;  // The request's stop strings plus the template's implicit ones.
};

// Completions' default max_tokens (OpenAI's); chat's default is what the context leaves.
inline constexpr int64_t kDefaultCompletionMaxTokens = 16;

std::optional<ApiError> BuildRequest(const GenerationRequest& req, const Tokenizer& tokenizer,
                                     const ChatTemplate& chat_template, const ModelLimits& limits,
                                     BuiltRequest* out);

// The prompt ids for chat `messages` (with BOS as the model says): the template's markup is
// tokenized with special-token parsing, the messages' content without, so content is always
// text. Chat completions and /tokenize both use it.
std::vector<int32_t> TokenizeChat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                  std::span<const ChatMessage> messages);

// The special token that `marker` ("<|im_end|>") is, or kNoToken when it is not one token.
int32_t SpecialTokenId(const Tokenizer& tokenizer, std::string_view marker);

// A random 64-bit seed for requests that give none.
uint64_t RandomSeed();

}  // namespace kvengine::server
