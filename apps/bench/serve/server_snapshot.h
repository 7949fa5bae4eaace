// What bench-serve reads from a server's /metrics: the counters it compares before and after
// the run, and the gauges it samples during it. Every figure is optional: a server that does
// not export one (or exports it under another name) just leaves it out of the report.
//
// Pure data and functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/serve/prom_scrape.h"

namespace kvengine::loadgen {

struct ServerSnapshot {
  // Counters (totals since the server started).
  std::optional<double> prefix_queries;   // prefix_cache_queries_total (prompt tokens looked up)
  std::optional<double> prefix_hits;      // prefix_cache_hits_total (served from the cache)
  std::optional<double> prompt_tokens;    // prompt_tokens_total
  std::optional<double> prompt_computed;  // prompt_tokens_computed_total (run through the model)
  std::optional<double> preemptions;      // num_preemptions_total
  // Gauges (now).
  std::optional<double> kv_usage;  // kv_cache_usage_perc, 0..1
  std::optional<double> running;   // num_requests_running
  std::optional<double> waiting;   // num_requests_waiting
};

ServerSnapshot SnapshotFromSamples(const std::vector<PromSample>& samples);

// One sample of the gauges during the run; t_s is seconds since the benchmark started.
struct TimelineSample {
  double t_s = 0;
  double kv_usage = 0;  // 0..1
  double running = 0;
  double waiting = 0;
};

// Everything read from /metrics around and during one run.
struct ServerObservations {
  std::optional<ServerSnapshot> before, after;  // nullopt: /metrics could not be read.
  std::vector<TimelineSample> timeline;         // Samples with kv_usage present.
  std::string metrics_error;                    // Why before/after are missing, if they are.
};

}  // namespace kvengine::loadgen
