#include "server/metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace kvengine::server {
namespace {

TEST(MetricsTest, PrometheusTextWithVllmNames) {
  EngineStats s;
  s.requests_running = 3;
  s.requests_waiting = 2;
  s.preemptions_total = 1;
  s.prompt_tokens_total = 100;
  s.prompt_tokens_computed_total = 40;
  s.generation_tokens_total = 50;
  s.prefix_cache_queries_tokens = 96;
  s.prefix_cache_hits_tokens = 60;
  s.kv_usage = 0.25;
  s.ttft.Observe(0.02);
  s.ttft.Observe(3.0);
  KvGroupStats g;
  g.capacity_blocks = 100;
  g.free_blocks = 60;
  g.cached_blocks = 15;
  g.used_blocks = 25;
  g.shared_blocks = 4;
  s.kv.groups = {g, g};
  s.kv.block_size = 16;
  s.kv.pool_bytes = 1 << 20;
  s.kv.used_bytes_by_dtype[size_t(KvDtype::kInt8)] = 4096;
  const std::string text = FormatMetrics(&s, "tiny \"q\"", {{200, 7}, {400, 1}});

  const char* expected[] = {
      "# TYPE kvengine:kv_cache_usage_perc gauge",
      "kvengine:kv_cache_usage_perc{model_name=\"tiny \\\"q\\\"\"} 0.25",
      "kvengine:num_requests_running{model_name=\"tiny \\\"q\\\"\"} 3",
      "kvengine:num_requests_waiting{model_name=\"tiny \\\"q\\\"\"} 2",
      "# TYPE kvengine:num_preemptions_total counter",
      "kvengine:prefix_cache_queries_total{model_name=\"tiny \\\"q\\\"\"} 96",
      "kvengine:prefix_cache_hits_total{model_name=\"tiny \\\"q\\\"\"} 60",
      "kvengine:prompt_tokens_total{model_name=\"tiny \\\"q\\\"\"} 100",
      "kvengine:prompt_tokens_computed_total{model_name=\"tiny \\\"q\\\"\"} 40",
      "kvengine:generation_tokens_total{model_name=\"tiny \\\"q\\\"\"} 50",
      "# TYPE kvengine:time_to_first_token_seconds histogram",
      "kvengine:time_to_first_token_seconds_bucket{model_name=\"tiny \\\"q\\\"\",le=\"0.01\"} 0",
      "kvengine:time_to_first_token_seconds_bucket{model_name=\"tiny \\\"q\\\"\",le=\"0.025\"} 1",
      "kvengine:time_to_first_token_seconds_bucket{model_name=\"tiny \\\"q\\\"\",le=\"+Inf\"} 2",
      "kvengine:time_to_first_token_seconds_count{model_name=\"tiny \\\"q\\\"\"} 2",
      "kvengine:time_to_first_token_seconds_sum{model_name=\"tiny \\\"q\\\"\"} 3.02",
      "# TYPE kvengine:inter_token_latency_seconds histogram",
      "# TYPE kvengine:e2e_request_latency_seconds histogram",
      "kvengine:kv_blocks_total{model_name=\"tiny \\\"q\\\"\",group=\"1\"} 100",
      "kvengine:kv_blocks_free{model_name=\"tiny \\\"q\\\"\",group=\"0\"} 60",
      "kvengine:kv_blocks_cached{model_name=\"tiny \\\"q\\\"\",group=\"0\"} 15",
      "kvengine:kv_blocks_used{model_name=\"tiny \\\"q\\\"\",group=\"0\"} 25",
      "kvengine:kv_blocks_shared{model_name=\"tiny \\\"q\\\"\",group=\"0\"} 4",
      "kvengine:kv_cache_used_bytes{model_name=\"tiny \\\"q\\\"\",dtype=\"int8\"} 4096",
      "kvengine:kv_cache_pool_bytes{model_name=\"tiny \\\"q\\\"\"} 1048576",
      "kvengine:http_responses_total{model_name=\"tiny \\\"q\\\"\",code=\"400\"} 1",
  };
  for (const char* line : expected) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
  // Every line is a comment or `name{labels} value`, and names carry the prefix.
  const std::regex sample(R"(^kvengine:[a-z0-9_]+\{[^{}]*\} [-+0-9.eInf]+$)");
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP kvengine:", 0) == 0 || line.rfind("# TYPE kvengine:", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    ++samples;
  }
  EXPECT_GT(samples, 60);
}

TEST(MetricsTest, WhileLoadingOnlyHttpCounters) {
  const std::string text = FormatMetrics(nullptr, "", {{503, 2}});
  EXPECT_EQ(text.find("kv_cache_usage_perc"), std::string::npos);
  EXPECT_NE(text.find("kvengine:http_responses_total{model_name=\"\",code=\"503\"} 2\n"),
            std::string::npos);
}

}  // namespace
}  // namespace kvengine::server
