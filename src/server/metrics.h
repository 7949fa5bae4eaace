// /metrics: the engine's statistics in Prometheus' text exposition format (version 0.0.4), with
// the prefix "kvengine:" and vLLM's metric names where vLLM has one:
//   gauges     kv_cache_usage_perc (0..1), num_requests_running, num_requests_waiting
//   counters   prefix_cache_queries_total, prefix_cache_hits_total (prompt tokens looked up /
//              served from cache), num_preemptions_total, prompt_tokens_total,
//              prompt_tokens_computed_total (prompt tokens really run through the model),
//              generation_tokens_total, request_success_total, request_cancelled_total,
//              request_rejected_total, recomputed_tokens_total, engine_steps_total
//   histograms time_to_first_token_seconds, inter_token_latency_seconds,
//              e2e_request_latency_seconds
// and the KV pool's own figures:
//   gauges     kv_blocks_total / kv_blocks_free / kv_blocks_cached / kv_blocks_used /
//              kv_blocks_shared {group="i"} (free: empty; cached: unreferenced but findable by
//              prefix lookups; used: referenced; shared: referenced by two or more),
//              kv_block_size_tokens, kv_cache_pool_bytes, kv_cache_used_bytes{dtype="f16"|...|
//              "padding"} (bytes of used blocks by number format), kv_tokens_stored
//   counters   kv_evictions_total {group}, kv_cow_copies_total
// plus the HTTP layer's http_responses_total{code="200"}. Every series carries
// model_name="<served model>".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kvengine/engine.h"

namespace kvengine::server {

// `stats` is null while the model loads (only the HTTP counters are written).
std::string FormatMetrics(const EngineStats* stats, const std::string& model_name,
                          const std::map<int, int64_t>& http_responses);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

}  // namespace kvengine::server
