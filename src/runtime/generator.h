// Generator: runs one prompt through a model over the paged KV cache and samples a continuation —
// the engine behind `kvengine run` and the golden tests. (Continuous batching of many requests is
// the scheduler's job; this drives one sequence.)
//
// Owner: one thread. The KvCacheManager it is given may hold other sequences (prefix-cache hits
// across runs are how prefix reuse is tested).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "base/thread_pool.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "runtime/sampler.h"

namespace kvengine {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  int64_t prefill_chunk = 256;   // Prompt tokens per forward pass.
  SamplingParams sampling;
  bool stop_at_eos = true;
  int32_t eos_token = -1;        // -1: none.
  int top_logits = 0;            // > 0: record the top-K logits of every prompt position.
  std::string cache_salt;
};

struct GenerateResult {
  std::vector<int32_t> output_ids;
  int64_t cached_prompt_tokens = 0;  // Served by the prefix cache.
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int64_t prefill_tokens = 0;        // Prompt tokens actually computed.
  // [prompt position][k] = (token id, logit) of the next-token distribution (teacher forcing).
  std::vector<std::vector<std::pair<int32_t, float>>> prompt_top_logits;
  std::vector<float> last_logits;    // Logits that chose the last output token.
  uint64_t kv_bytes_in_use = 0;      // Pool bytes in use at the end, before release.
};

// Called with each new token as it is sampled; return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

// Runs `prompt` as sequence `seq` (added, generated, then released) and returns the output ids.
Result<GenerateResult> Generate(const Model& model, KvCacheManager& kv, ThreadPool& pool,
                                SeqId seq, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const TokenCallback& on_token = {});

// The K largest (id, logit) pairs, largest first; ties broken by the lower id.
std::vector<std::pair<int32_t, float>> TopK(std::span<const float> logits, int k);

}  // namespace kvengine
