// Replays a demo Workload (demo_workload.h) through a real Engine — the scheduler, the paged
// KvCacheManager with prefix caching, the model's batched forward pass — and measures what the
// report shows: per-request TTFT and prefix hits, throughput, and the KV memory actually held.
//
// KV memory is measured, not computed: the runner samples Engine::Stats() at every event (each
// step's stats are published before its events) and on its own thread between events, and keeps
// the largest `kv.used_bytes` (blocks with refcount >= 1; cached blocks nobody holds are free
// memory and not counted) and the most sequences holding KV at once. The contiguous figure a
// report compares against is derived from those measurements (ContiguousBytes below).
//
// The pool is sized from the workload (every request's blocks, as if nothing were shared), so
// nothing is preempted and the f16 and int8 runs schedule the same work.
//
// Threads: RunWorkload blocks the calling thread, which submits requests and receives events
// through a queue; the engine runs its own loop thread and compute threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "demo/demo_workload.h"
#include "model/model.h"
#include "quant/kv_dtype.h"
#include "sched/scheduler_options.h"

namespace kvengine::demo {

struct RunOptions {
  KvDtype kv_dtype = KvDtype::kF16;  // Every layer's K and V.
  int block_size = 16;
  int64_t max_model_len = 4096;  // The engine's context; contiguous preallocation reserves it.
  int threads = 0;               // Compute threads; 0 = all cores.
  // The engine's scheduling defaults, except tokens per step: below the default 2048 so that
  // the long document's prefill is chunked and short requests arriving with it get their first
  // token in the first step.
  SchedulerOptions sched = {.max_num_batched_tokens = 512};
  std::string model_fingerprint;  // Prefix-cache namespace; empty: the model's name.
  // Called on the calling thread after each batch of events: generated tokens so far, and the
  // workload's total.
  std::function<void(int64_t done, int64_t total)> on_progress;
};

struct RequestResult {
  Scenario scenario = Scenario::kSharedSystemPrompt;
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // Served by the prefix cache.
  int64_t completion_tokens = 0;
  double ttft_s = 0;  // Submit to first token.
  double e2e_s = 0;   // Submit to last token.
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
};

struct RunResult {
  KvDtype kv_dtype = KvDtype::kF16;
  int64_t max_model_len = 0;
  int block_size = 0;
  int64_t max_num_batched_tokens = 0;
  uint64_t kv_bytes_per_token = 0;         // What the pool allocates per token (the planner's).
  uint64_t kv_bytes_per_max_sequence = 0;  // One sequence of max_model_len tokens, in blocks.
  uint64_t pool_bytes = 0;                 // The pool the engine was given.
  double wall_s = 0;                       // First submit to last event.
  uint64_t peak_kv_bytes = 0;              // Most KV bytes held at once (used blocks).
  int64_t peak_sequences = 0;              // Most sequences holding KV at once.
  int64_t peak_tokens_stored = 0;          // Most KV tokens held at once (shared ones once).
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  std::vector<RequestResult> requests;  // [workload request]

  double PrefixHitRate() const;  // cached / prompt tokens, 0..1.
  double GeneratedTokensPerSecond() const;
  // Prompt tokens the model computed (not served by the cache) plus generated, per second.
  double TokensPerSecond() const;
  // What contiguous max-length preallocation needs for the same peak concurrency: every sequence
  // that held KV at once reserves max_model_len tokens up front.
  uint64_t ContiguousBytes() const;
};

// TTFTs of the requests of `scenario` (every request when null), in request order.
std::vector<double> Ttfts(const RunResult& run, const Scenario* scenario = nullptr);
// The p-th percentile (0..100, nearest rank) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double p);

// Runs the workload to completion; errors when a request is refused or ends other than by
// reaching max_tokens.
Result<RunResult> RunWorkload(std::shared_ptr<const Model> model, const Workload& workload,
                              const RunOptions& options);

}  // namespace kvengine::demo
