// EngineOptions: what an Engine is created with (Engine::Create, engine.h). Plain data with
// defaults; validated by Engine::Create. It embeds the scheduler's, KV cache's and tiers' own
// options structs rather than copying their fields.
#pragma once

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "kv/kv_cache_manager.h"
#include "sched/scheduler_options.h"
#include "tier/tier_config.h"

namespace kvengine {

struct EngineOptions {
  // Continuous batching: max_num_seqs (sequences decoding at once; n choices count n),
  // max_num_batched_tokens (tokens per forward pass, decodes + prefill chunks, >= max_num_seqs),
  // the admission watermark, the step policy and contiguous_reservation (admission reserves
  // max_model_len tokens of blocks per sequence up front, emulating pre-PagedAttention systems
  // for side-by-side comparisons; `--kv-policy contiguous`). Passed to the scheduler as it is.
  SchedulerOptions sched;
  // Requests that find no free seat wait, up to this many; beyond it Submit refuses them
  // (kUnavailable, 503). Requests a free seat awaits never count, so a burst of max_num_seqs +
  // max_queued_requests into an idle engine is accepted. 0: no waiting queue (accepted only
  // while a seat is free for them).
  int max_queued_requests = 256;
  int threads = 0;                        // Compute threads; 0 = all cores.
  // Groups, block size, memory, max_model_len, prefix caching. Empty groups: the model's
  // groups with f16 KV (BuildKvGroups); an empty model_fingerprint: the model's name.
  KvCacheConfig kv;
  // The model's end-of-generation tokens (the tokenizer's EOS, e.g. Tokenizer::eos()); a
  // request stops at them unless it sets ignore_eos.
  std::vector<int32_t> eos_token_ids;
  // Time for latencies and arrival order; null: SteadyClock. Read from Submit threads and the
  // loop, so it must be thread-safe.
  const Clock* clock = nullptr;
  // Offload tiers below the pool (host RAM, disk, Redis); all off by default (docs/tiers.md).
  TierConfig tiers;
};

}  // namespace kvengine
