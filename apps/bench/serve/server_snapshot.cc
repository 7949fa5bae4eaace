#include "bench/serve/server_snapshot.h"

namespace kvengine::loadgen {

ServerSnapshot SnapshotFromSamples(const std::vector<PromSample>& samples) {
  ServerSnapshot s;
  s.prefix_queries = SumMetric(samples, "prefix_cache_queries_total");
  s.prefix_hits = SumMetric(samples, "prefix_cache_hits_total");
  s.prompt_tokens = SumMetric(samples, "prompt_tokens_total");
  s.prompt_computed = SumMetric(samples, "prompt_tokens_computed_total");
  s.preemptions = SumMetric(samples, "num_preemptions_total");
  s.kv_usage = SumMetric(samples, "kv_cache_usage_perc");
  s.running = SumMetric(samples, "num_requests_running");
  s.waiting = SumMetric(samples, "num_requests_waiting");
  return s;
}

}  // namespace kvengine::loadgen
