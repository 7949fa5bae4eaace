#include "bench/serve/serve_metrics.h"

#include <gtest/gtest.h>

namespace kvengine::loadgen {
namespace {

TEST(ServeMetricsTest, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);  // numpy.percentile([1,2,3,4], 50)
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);  // rank 2.7
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({5}, 99), 5);
  const Distribution d = Distribute({4, 1, 3, 2}, 1000);
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 2500);
  EXPECT_DOUBLE_EQ(d.p50, 2500);
  EXPECT_DOUBLE_EQ(d.p90, 3700);
  EXPECT_EQ(Distribute({}, 1).count, 0);
}

RequestRecord Rec(double send, std::vector<double> chunks, double end, int64_t out) {
  RequestRecord r;
  r.ok = true;
  r.send_s = send;
  r.chunk_s = std::move(chunks);
  r.end_s = end;
  r.output_tokens = out;
  r.prompt_tokens = 10;
  return r;
}

TEST(ServeMetricsTest, VllmDefinitionsByHand) {
  // Request A: sent at 0, tokens at 0.2, 0.3, 0.5, done at 0.5; 3 tokens.
  //   TTFT 200 ms, E2E 500 ms, TPOT (500 - 200) / 2 = 150 ms, ITLs 100 and 200 ms.
  // Request B: sent at 1, one token at 1.4, done at 1.5: TTFT 400, E2E 500, no TPOT, no ITL.
  // Request C: failed: counted, never in the latencies.
  std::vector<RequestRecord> rs = {Rec(0, {0.2, 0.3, 0.5}, 0.5, 3), Rec(1, {1.4}, 1.5, 1)};
  rs.back().cached_tokens = 5;
  RequestRecord failed;
  failed.error = "HTTP 503: queue full";
  rs.push_back(failed);
  rs.push_back(failed);
  const BenchSummary s = Summarize(rs, /*duration_s=*/2.0, ServerObservations{});
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.total_input_tokens, 20);
  EXPECT_EQ(s.total_output_tokens, 4);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 2.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 12.0);
  EXPECT_NEAR(s.ttft_ms.mean, 300, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p90, 380, 1e-9);  // 200 + 0.9 * 200
  EXPECT_EQ(s.tpot_ms.count, 1);
  EXPECT_NEAR(s.tpot_ms.mean, 150, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 2);
  EXPECT_NEAR(s.itl_ms.mean, 150, 1e-9);
  EXPECT_NEAR(s.itl_ms.p50, 150, 1e-9);
  EXPECT_NEAR(s.e2e_ms.mean, 500, 1e-9);
  EXPECT_DOUBLE_EQ(*s.usage_cached_frac, 0.5);  // 5 of B's 10 prompt tokens.
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0], (std::pair<std::string, int64_t>{"HTTP 503: queue full", 2}));
  EXPECT_FALSE(s.prefix_cache_hit_rate.has_value());
  EXPECT_FALSE(s.peak_kv_usage.has_value());
}

TEST(ServeMetricsTest, ServerFiguresFromMetricsDeltas) {
  ServerObservations o;
  o.before = ServerSnapshot{};
  o.before->prefix_queries = 100;
  o.before->prefix_hits = 10;
  o.before->prompt_tokens = 100;
  o.before->prompt_computed = 90;
  o.before->preemptions = 3;
  o.after = *o.before;
  o.after->prefix_queries = 500;  // +400 queried
  o.after->prefix_hits = 310;     // +300 hit
  o.after->prompt_tokens = 500;
  o.after->prompt_computed = 190;  // +100 computed of +400
  o.after->preemptions = 3;
  o.timeline = {{0.1, 0.2, 1, 0}, {0.2, 0.75, 4, 2}, {0.3, 0.5, 3, 0}};
  const BenchSummary s = Summarize({}, 1.0, o);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hit_rate, 0.75);
  EXPECT_DOUBLE_EQ(*s.prompt_computed_frac, 0.25);
  EXPECT_DOUBLE_EQ(*s.preemptions, 0);
  EXPECT_DOUBLE_EQ(*s.peak_kv_usage, 0.75);
  EXPECT_DOUBLE_EQ(*s.peak_running, 4);
  // No prefix query during the run: no rate (not 0 / 0).
  o.after->prefix_queries = 100;
  EXPECT_FALSE(Summarize({}, 1.0, o).prefix_cache_hit_rate.has_value());
}

}  // namespace
}  // namespace kvengine::loadgen
