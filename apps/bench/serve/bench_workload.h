// What bench-serve sends and when: the synthetic workload (bench/kv/synthetic_workload.h) as
// conversations of turns, with the length caps applied, and the arrival times of conversations.
//
// A single-turn workload (sharegpt, shared_prefix) is one conversation per request. In a
// multi_turn conversation, turn k > 0 is sent when turn k-1 completes, and its prompt is turn
// k-1's prompt + the tokens the server actually generated for it + turn k's new user message,
// as a chat client's history grows; so only the new message is stored here.
//
// Caps (0 = none) keep a run short on a slow machine:
//   max_output_tokens  each request's output length (max_tokens) is at most this
//   max_prompt_tokens  a single-turn prompt keeps at most its first this many tokens (the
//                      shared system prompt stays shared); a multi_turn conversation's first
//                      prompt and each later user message likewise
// Caps only shorten, so every request still fits the max_model_len the workload was made for.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/kv/synthetic_workload.h"

namespace kvengine::loadgen {

struct Turn {
  std::vector<int32_t> message;  // Turn 0: the whole prompt; turn k > 0: the new user message.
  int64_t max_tokens = 1;        // Output tokens to ask for (>= 1).
  // The tokens the workload planned as this turn's output (max_tokens of them): a multi_turn
  // history uses them when the server does not return the ids it generated.
  std::vector<int32_t> planned_output;
};

struct Conversation {
  std::vector<Turn> turns;  // >= 1.
};

struct LengthCaps {
  int64_t max_prompt_tokens = 0;  // 0: no cap.
  int64_t max_output_tokens = 0;  // 0: no cap.
};

std::vector<Conversation> ToConversations(const Workload& workload, const LengthCaps& caps);

int64_t CountTurns(const std::vector<Conversation>& conversations);

// Start times (seconds from 0) of `n` conversations arriving as a Poisson process of `rate` per
// second: exponential gaps drawn from std::mt19937_64 by inversion (-ln(1 - U) / rate), so the
// same seed gives the same times everywhere. The first arrives at 0; rate = +inf: all at 0.
std::vector<double> PoissonArrivals(int64_t n, double rate, uint64_t seed);

}  // namespace kvengine::loadgen
