#include "report/serve_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace kvengine::loadgen {
namespace {

BenchServeResult Sample() {
  BenchServeResult r;
  r.options.url = "http://127.0.0.1:8080";
  r.options.workload = KvWorkload::kSharedPrefix;
  r.options.num_prompts = 3;
  r.options.system_prompt_tokens = 64;
  r.options.vocab_size = 512;
  r.options.load.max_concurrency = 2;
  r.server = {"tiny <model>", 512, 512};
  r.conversations = 3;
  for (int i = 0; i < 2; ++i) {
    RequestRecord rec;
    rec.ok = true;
    rec.send_s = 0.1 * i;
    rec.chunk_s = {0.1 * i + 0.05, 0.1 * i + 0.07, 0.1 * i + 0.1};
    rec.end_s = 0.1 * i + 0.1;
    rec.prompt_tokens = 70;
    rec.output_tokens = 3;
    r.load.records.push_back(rec);
  }
  RequestRecord failed;
  failed.error = "HTTP 400: <bad> & worse";
  r.load.records.push_back(failed);
  r.load.duration_s = 0.2;
  r.observations.timeline = {{0.0, 0.1, 1, 0}, {0.1, 0.4, 2, 1}, {0.2, 0.2, 0, 0}};
  r.summary = Summarize(r.load.records, r.load.duration_s, r.observations);
  return r;
}

TEST(ReportTest, TextHasVllmShapedLines) {
  const std::string t = FormatBenchText(Sample());
  EXPECT_NE(t.find("Successful requests:                    2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("Failed requests:                        1\n"), std::string::npos);
  EXPECT_NE(t.find("Mean TTFT (ms):                         50.00\n"), std::string::npos);
  EXPECT_NE(t.find("-------------Inter-token Latency--------------"), std::string::npos);
  EXPECT_NE(t.find("Peak KV cache usage (%):                40.0\n"), std::string::npos);
  EXPECT_NE(t.find("Prefix cache hit rate (%):              n/a\n"), std::string::npos);
  EXPECT_NE(t.find("shared_prefix, 3 requests (system prompt 64 tokens)"), std::string::npos);
  EXPECT_NE(t.find("failed x1: HTTP 400: <bad> & worse\n"), std::string::npos);
}

TEST(ReportTest, JsonHasEveryFigure) {
  const nlohmann::json j = nlohmann::json::parse(FormatBenchJson(Sample()));
  EXPECT_EQ(j["completed"], 2);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["workload"], "shared_prefix");
  EXPECT_NEAR(j["mean_ttft_ms"].get<double>(), 50, 1e-6);
  EXPECT_NEAR(j["median_tpot_ms"].get<double>(), 25, 1e-6);  // (100 - 50) / 2
  EXPECT_NEAR(j["p99_itl_ms"].get<double>(), 30, 1e-6);      // Gaps 20, 30, 20, 30.
  EXPECT_NEAR(j["request_throughput"].get<double>(), 10, 1e-9);
  EXPECT_TRUE(j["request_rate"].is_null());  // inf
  EXPECT_EQ(j["max_concurrency"], 2);
  EXPECT_TRUE(j["prefix_cache_hit_rate"].is_null());
  EXPECT_DOUBLE_EQ(j["peak_kv_cache_usage"].get<double>(), 0.4);
  EXPECT_EQ(j["peak_running_requests"], 2.0);
  EXPECT_EQ(j["errors"][0]["count"], 1);
}

TEST(ReportTest, SvgAndHtml) {
  const BenchServeResult r = Sample();
  const std::string svg = FormatBenchSvg(r);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(CountOccurrences(svg, "<polyline"), 5u);  // KV usage, running, waiting, two CDFs.
  EXPECT_EQ(CountOccurrences(svg, "<polygon"), 1u);   // The KV usage area.
  EXPECT_EQ(CountOccurrences(svg, "<text"), CountOccurrences(svg, "</text>"));
  EXPECT_EQ(CountOccurrences(svg, ">p99 "), 2u);
  EXPECT_NE(svg.find("tiny &lt;model&gt;"), std::string::npos);  // Escaped.
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  const std::string html = FormatBenchHtml(r);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("<td>Successful requests:</td><td class=\"v\">2</td>"), std::string::npos);
  EXPECT_NE(html.find("&lt;bad&gt; &amp; worse"), std::string::npos);
  EXPECT_NE(html.find(svg), std::string::npos);
  // No samples and no requests: still a whole chart, with notes instead of curves.
  BenchServeResult empty;
  const std::string bare = FormatBenchSvg(empty);
  EXPECT_EQ(CountOccurrences(bare, "<polyline"), 0u);
  EXPECT_NE(bare.find("no /metrics samples"), std::string::npos);
  EXPECT_EQ(bare.find("nan"), std::string::npos);
}

}  // namespace
}  // namespace kvengine::loadgen
