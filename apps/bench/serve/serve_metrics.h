// The figures of one bench-serve run, computed from the client's request records (vLLM's
// definitions, request_stats.h) and the server's /metrics (server_snapshot.h):
//   completed / failed      requests that streamed to [DONE] / that did not
//   duration_s              from the start of the run to the end of the last request
//   request_throughput      completed / duration (req/s)
//   output_throughput       output tokens of completed requests / duration (tok/s)
//   total_token_throughput  (prompt + output tokens of completed requests) / duration
//   ttft/tpot/itl/e2e       mean and p50/p90/p99 in milliseconds over completed requests (ITL:
//                           over every gap of every completed request; TPOT: over requests with
//                           two or more output tokens)
//   prefix_cache_hit_rate   delta prefix_cache_hits_total / delta prefix_cache_queries_total
//   prompt_computed_frac    delta prompt_tokens_computed_total / delta prompt_tokens_total
//   peak_kv_usage           the largest kv_cache_usage_perc sampled during the run (0..1)
//   peak_running            the largest num_requests_running sampled during the run
//   usage_cached_frac       sum of usage.cached_tokens / sum of prompt tokens (completed
//                           requests that reported it): the same hit rate seen per request
// Percentiles interpolate linearly between closest ranks, as numpy.percentile does.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/serve/request_stats.h"
#include "bench/serve/server_snapshot.h"

namespace kvengine::loadgen {

// numpy.percentile(sorted, p) with linear interpolation; `sorted` ascending and non-empty,
// p in [0, 100].
double Percentile(const std::vector<double>& sorted, double p);

struct Distribution {
  int64_t count = 0;  // 0: no value (the figures are 0).
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

// Sorts `values` and summarizes them, each multiplied by `scale` (1000: seconds -> ms).
Distribution Distribute(std::vector<double> values, double scale);

struct BenchSummary {
  int64_t completed = 0, failed = 0;
  double duration_s = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::optional<double> usage_cached_frac;
  // From /metrics (nullopt when the server does not export the figure).
  std::optional<double> prefix_cache_hit_rate, prompt_computed_frac, peak_kv_usage, peak_running;
  std::optional<double> preemptions;  // During the run.
  // Distinct failure messages with their counts, most frequent first.
  std::vector<std::pair<std::string, int64_t>> errors;
};

BenchSummary Summarize(const std::vector<RequestRecord>& records, double duration_s,
                       const ServerObservations& server);

}  // namespace kvengine::loadgen
