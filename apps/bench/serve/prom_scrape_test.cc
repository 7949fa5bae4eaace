#include "bench/serve/prom_scrape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/serve/server_snapshot.h"

namespace kvengine::loadgen {
namespace {

// The shape kvengine's /metrics has (server/metrics.cc), trimmed.
constexpr const char* kKvengine =
    "# HELP kvengine:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE kvengine:kv_cache_usage_perc gauge\n"
    "kvengine:kv_cache_usage_perc{model_name=\"tiny\"} 0.25\n"
    "kvengine:prefix_cache_queries_total{model_name=\"tiny\"} 1200\n"
    "kvengine:prefix_cache_hits_total{model_name=\"tiny\"} 960\n"
    "kvengine:num_requests_running{model_name=\"tiny\"} 4\n"
    "kvengine:kv_blocks_used{model_name=\"tiny\",group=\"0\"} 10\n"
    "kvengine:kv_blocks_used{model_name=\"tiny\",group=\"1\"} 6\n"
    "kvengine:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"+Inf\"} 3\n"
    "kvengine:http_responses_total{code=\"200\"} 17\n";

TEST(PromScrapeTest, ParsesKvengineMetrics) {
  Result<std::vector<PromSample>> s = ParsePrometheusText(kKvengine);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 8u);
  EXPECT_EQ((*s)[0].name, "kvengine:kv_cache_usage_perc");
  EXPECT_EQ((*s)[0].labels,
            (std::vector<std::pair<std::string, std::string>>{{"model_name", "tiny"}}));
  EXPECT_DOUBLE_EQ((*s)[0].value, 0.25);
  EXPECT_EQ(SumMetric(*s, "kv_blocks_used"), 16);  // Summed over groups.
  EXPECT_EQ(SumMetric(*s, "http_responses_total"), 17);
  EXPECT_FALSE(SumMetric(*s, "kv_cache_usage").has_value());  // Names match whole.
  const ServerSnapshot snap = SnapshotFromSamples(*s);
  EXPECT_EQ(snap.prefix_queries, 1200);
  EXPECT_EQ(snap.prefix_hits, 960);
  EXPECT_EQ(snap.kv_usage, 0.25);
  EXPECT_EQ(snap.running, 4);
  EXPECT_FALSE(snap.waiting.has_value());
}

TEST(PromScrapeTest, VllmNamesEscapesAndSpecialValues) {
  Result<std::vector<PromSample>> s = ParsePrometheusText(
      "vllm:num_requests_running{model_name=\"a \\\"b\\\" \\\\ c\\nd\",} 2 1700000000000\r\n"
      "other:num_requests_running 100\n"
      "  \n"
      "x_nan NaN\nx_inf +Inf\nx_neg -Inf\nx_exp 1.5e3\nno_labels 7\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)[0].labels[0].second, "a \"b\" \\ c\nd");
  EXPECT_EQ(SumMetric(*s, "num_requests_running"), 2);  // Only kvengine: and vllm: count.
  EXPECT_TRUE(std::isnan((*s)[2].value));
  EXPECT_TRUE(std::isinf((*s)[3].value) && (*s)[3].value > 0);
  EXPECT_TRUE(std::isinf((*s)[4].value) && (*s)[4].value < 0);
  EXPECT_EQ((*s)[5].value, 1500);
  EXPECT_EQ((*s)[6].name, "no_labels");
}

TEST(PromScrapeTest, MalformedLinesNameTheirNumber) {
  for (const char* bad : {"m{a=\"1\"\n", "m{a=1} 2\n", "m 1x\n", "m\n", "{a=\"1\"} 2\n",
                          "m{a=\"1} 2\n", "m 1e999\n", "9m 1\n", "m{=\"1\"} 2\n"}) {
    Result<std::vector<PromSample>> s = ParsePrometheusText(std::string("# ok\nok 1\n") + bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("line 3"), std::string::npos) << s.status().message();
  }
  EXPECT_TRUE(ParsePrometheusText("").ok());
}

TEST(PromScrapeTest, CorruptedTextNeverCrashes) {
  // Every text made by flipping, cutting or repeating bytes of a valid one either parses or is an
  // error; none reads out of bounds (the ASan build checks that).
  const std::string valid = kKvengine;
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string t = valid.substr(0, rng() % (valid.size() + 1));
    for (int k = int(rng() % 4); k > 0 && !t.empty(); --k) {
      t[rng() % t.size()] = "{}\"\\=, \n#:a9.-+eINF"[rng() % 19];
    }
    Result<std::vector<PromSample>> s = ParsePrometheusText(t);
    if (s.ok()) {
      for (const PromSample& p : *s) EXPECT_FALSE(p.name.empty());
    }
  }
}

}  // namespace
}  // namespace kvengine::loadgen
