// A request to the engine (RequestParams), the events it produces (RequestEvent) and how a choice
// ends (FinishReason). Plain data; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/sampling_params.h"

namespace kvengine {

using RequestId = uint64_t;

// Most choices (n) of one request.
inline constexpr int kMaxChoices = 128;
// Most top logprobs per token (OpenAI's limit).
inline constexpr int kMaxLogprobs = 20;

struct RequestParams {
  std::vector<int32_t> prompt;  // Token ids, BOS included as the caller decided.
  int64_t max_tokens = 16;      // New tokens per choice.
  int n = 1;                    // Choices sharing the prompt's blocks (copy-on-write after).
  SamplingParams sampling;      // Choice i uses seed + i.
  int logprobs = 0;             // 1..kMaxLogprobs: also the top-K logprobs of each position.
  std::vector<int32_t> stop_token_ids;  // Besides the model's end-of-generation tokens.
  bool ignore_eos = false;
  std::string cache_salt;
  int priority = 0;  // Higher is served first and preempted later.
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "none", "stop", "length", "cancelled", "error".

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// One event per sampled token (finish_reason kNone), and one final event per choice (no token).
// The token that stopped a choice (EOS or a stop token) has its own token event, as Generate
// returns it; control tokens decode to no text.
struct RequestEvent {
  RequestId id = 0;
  int choice = 0;
  bool has_token = false;
  int32_t token = 0;
  float logprob = 0;  // Log-softmax of the model's logits (before sampling filters).
  std::vector<TokenLogprob> top_logprobs;  // RequestParams::logprobs entries, most likely first.
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;  // kError only.
  // Set on the final event of a choice:
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // Served by the prefix cache.
  int64_t completion_tokens = 0;
};

// Called on the engine thread (the final kCancelled events of Stop(): on the thread calling
// Stop()), with no engine lock held. It must not block (push into the caller's own queue); it
// may call Submit, Cancel and Stats (they only queue or copy), never Stop.
using EventCallback = std::function<void(const RequestEvent&)>;

}  // namespace kvengine
