// EngineStats: the engine's counters, KV figures and latency histograms (Engine::Stats, a
// snapshot published by the engine loop each step; any thread may copy it).
#pragma once

#include <cstdint>

#include "base/histogram.h"
#include "kv/kv_stats.h"
#include "tier/tier_manager.h"

namespace kvengine {

struct EngineStats {
  // Requests with a sequence running; requests queued or preempted with none running.
  int64_t requests_running = 0, requests_waiting = 0, preemptions_total = 0;
  // Prompt tokens of admitted requests; of which computed by the model the first time (tokens
  // the prefix cache served are not); generated tokens.
  int64_t prompt_tokens_total = 0, prompt_tokens_computed_total = 0, generation_tokens_total = 0;
  int64_t recomputed_tokens_total = 0;  // Positions run again after a preemption.
  // Prompt tokens looked up in / served by the prefix cache (every admission, re-admissions too).
  int64_t prefix_cache_queries_tokens = 0, prefix_cache_hits_tokens = 0;
  int64_t requests_finished_total = 0;   // Every choice ended by stop or length.
  int64_t requests_cancelled_total = 0;  // Cancel() or Stop().
  int64_t requests_rejected_total = 0;   // Submit errors.
  int64_t steps_total = 0;               // Forward passes.
  KvStats kv;
  double kv_usage = 0;  // Used blocks / capacity, 0..1.
  // Since start, seconds: time to first token, inter-token latency, end-to-end latency.
  Histogram ttft{Histogram::LatencyBounds()};
  Histogram itl{Histogram::LatencyBounds()};
  Histogram e2e{Histogram::LatencyBounds()};
  bool has_tiers = false;
  TierStats tiers;               // Meaningful when has_tiers.
  int64_t tier_swap_ins_total = 0;  // Preempted sequences resumed with KV from a tier.
};

}  // namespace kvengine
