// Synthetic request streams for KV-cache workload simulation (`kvengine bench kv`). There is no
// model: a request is a prompt of random token ids plus the tokens it will "generate", drawn up
// front so that a request generates the same tokens however often it is preempted and recomputed,
// and a multi-turn conversation's next prompt contains exactly what the previous turn generated
// (which is what lets a prefix cache hit).
//
// Every random number comes from std::mt19937_64 (fully specified by the standard) through the
// generator's own uniform and Box-Muller normal draws, not std::*_distribution (whose output
// differs between standard libraries): the same spec gives the same requests everywhere.
//
// Length distributions (lognormal with the stated mean, rounded, clipped to the limits):
//   sharegpt       prompt mean 161 (sigma 1.0), output mean 338 (sigma 0.8): the per-turn means
//                  of ShareGPT reported by the vLLM paper; prompt + output <= max_model_len.
//   shared_prefix  one system prompt of system_prompt_tokens shared by every request + a user
//                  part of mean 64 (sigma 0.8) + a ShareGPT-like output.
//   multi_turn     num_requests / turns conversations of `turns` turns. Turn k's prompt is turn
//                  k-1's prompt + turn k-1's output + a new user message (mean 64, sigma 0.8);
//                  outputs are ShareGPT-like. Lengths are clipped so that the whole conversation
//                  stays within max_model_len (each later turn keeps room for >= 1 + 1 tokens).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kvengine/status.h"

namespace kvengine {

enum class KvWorkload : uint8_t { kShareGpt, kSharedPrefix, kMultiTurn };

inline constexpr KvWorkload kAllKvWorkloads[] = {KvWorkload::kShareGpt, KvWorkload::kSharedPrefix,
                                                 KvWorkload::kMultiTurn};

// "sharegpt", "shared_prefix", "multi_turn".
std::string_view KvWorkloadName(KvWorkload workload);
// The names above; '-' may stand for '_'.
Result<KvWorkload> ParseKvWorkload(std::string_view name);

// Target means of the length distributions (tests compare the generated means against them).
inline constexpr double kShareGptPromptMean = 161;
inline constexpr double kShareGptOutputMean = 338;
inline constexpr double kUserMessageMean = 64;  // shared_prefix user part, multi_turn message.

struct WorkloadSpec {
  KvWorkload kind = KvWorkload::kShareGpt;
  int64_t num_requests = 1000;      // multi_turn: num_requests / turns conversations.
  int turns = 5;                    // multi_turn only: turns per conversation, >= 1.
  int64_t max_model_len = 4096;     // Every request's prompt + output fits in this.
  int system_prompt_tokens = 1024;  // shared_prefix only.
  int32_t vocab_size = 32000;       // Token ids are uniform in [0, vocab_size).
  uint64_t seed = 1;
};

struct SimRequest {
  std::vector<int32_t> prompt;  // [prompt length >= 1] token ids.
  std::vector<int32_t> output;  // [output length >= 1] the tokens it generates, in order.
  int32_t session = 0;  // Conversation index; single-turn workloads: the request's own index.
  int32_t turn = 0;     // 0: available at t = 0; k > 0: arrives when turn k-1 completes.
  int32_t next = -1;    // Index (in Workload::requests) of the conversation's next turn, or -1.
};

struct Workload {
  KvWorkload kind = KvWorkload::kShareGpt;
  // Turn-0 requests in arrival order; a conversation's turns follow its turn 0 by index
  // (requests[i].next == i + 1 within a conversation).
  std::vector<SimRequest> requests;

  int64_t TotalPromptTokens() const;
  int64_t TotalOutputTokens() const;
};

// Errors (InvalidArgument) for specs no request stream can satisfy: no request, turns < 1,
// vocab < 2, or max_model_len too short for the system prompt or for every turn.
Result<Workload> GenerateWorkload(const WorkloadSpec& spec);

}  // namespace kvengine
