#include "bench/kv/kv_bench.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "report/kv_bench_report.h"

namespace kvengine {
namespace {

// The default run's shape at a quarter of the budget and fewer requests: llama-3-8b f16, 1 GiB
// = 8192 token slots = 2 contiguous sequences of 4096.
KvBenchOptions Reduced() {
  KvBenchOptions o;
  o.kv_memory_bytes = uint64_t{1} << 30;
  o.num_requests = 200;
  o.turns = 4;
  return o;
}

const KvBenchRow& Find(const std::vector<KvBenchRow>& rows, KvWorkload w, KvPolicy p) {
  for (const KvBenchRow& r : rows) {
    if (r.workload == KvWorkloadName(w) && r.policy == KvPolicyName(p)) return r;
  }
  KV_CHECK(false) << "no row " << KvWorkloadName(w) << "/" << KvPolicyName(p);
  return rows.front();
}

TEST(KvBenchTest, ReducedRunMeetsTheTargetsInDirection) {
  const KvBenchOptions o = Reduced();
  int64_t last_done = 0;
  int64_t last_total = 0;
  Result<std::vector<KvBenchRow>> rows = RunKvBench(o, [&](int64_t done, int64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 9u);
  EXPECT_EQ(last_total, 9 * 200);
  EXPECT_EQ(last_done, last_total);
  for (const KvBenchRow& r : *rows) {
    SCOPED_TRACE(r.workload + "/" + r.policy);
    EXPECT_EQ(r.requests_completed, r.requests);
    EXPECT_EQ(r.requests, 200);
    if (r.policy == "contiguous") {
      EXPECT_EQ(r.peak_concurrent_sequences, 2);
      EXPECT_DOUBLE_EQ(r.capacity_ratio, 1.0);
      EXPECT_LT(r.utilization, 0.5);  // Reserved max-length regions sit mostly empty.
      EXPECT_EQ(r.kv_token_slots, 8192);
    } else {
      EXPECT_GE(r.utilization, 0.96);  // Only the last block of each sequence is partial.
      EXPECT_EQ(r.kv_token_slots, 8192);
    }
    if (r.policy != "paged_prefix") {
      EXPECT_EQ(r.prefix_hit_rate, 0);
    }
  }
  const KvBenchRow& sharegpt = Find(*rows, KvWorkload::kShareGpt, KvPolicy::kPagedPrefix);
  EXPECT_GE(sharegpt.capacity_ratio, 4.0);
  EXPECT_GE(Find(*rows, KvWorkload::kShareGpt, KvPolicy::kPagedNoPrefix).capacity_ratio, 4.0);
  EXPECT_GT(Find(*rows, KvWorkload::kSharedPrefix, KvPolicy::kPagedPrefix).prefix_hit_rate, 0.8);
  EXPECT_GT(Find(*rows, KvWorkload::kMultiTurn, KvPolicy::kPagedPrefix).prefix_hit_rate, 0.45);
  // Sharing the system prompt's blocks fits more sequences than storing it per sequence.
  EXPECT_GT(
      Find(*rows, KvWorkload::kSharedPrefix, KvPolicy::kPagedPrefix).peak_concurrent_sequences,
      Find(*rows, KvWorkload::kSharedPrefix, KvPolicy::kPagedNoPrefix).peak_concurrent_sequences);
}

TEST(KvBenchTest, RunsTheRequestedSubsetDeterministically) {
  KvBenchOptions o = Reduced();
  o.workloads = {KvWorkload::kShareGpt};
  o.policies = {KvPolicy::kPagedNoPrefix};
  const std::vector<KvBenchRow> a = RunKvBench(o).value();
  const std::vector<KvBenchRow> b = RunKvBench(o).value();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].workload, "sharegpt");
  EXPECT_EQ(a[0].policy, "paged_no_prefix");
  EXPECT_EQ(a[0].steps, b[0].steps);
  EXPECT_EQ(a[0].peak_concurrent_sequences, b[0].peak_concurrent_sequences);
  EXPECT_EQ(a[0].preemptions, b[0].preemptions);
  EXPECT_DOUBLE_EQ(a[0].utilization, b[0].utilization);
  // Without a contiguous run the ratio uses contiguous's capacity (2 sequences).
  EXPECT_DOUBLE_EQ(a[0].capacity_ratio, a[0].peak_concurrent_sequences / 2.0);
}

TEST(KvBenchTest, TakesAResolvedModelAndPerLayerDtypes) {
  KvBenchOptions o = Reduced();
  o.workloads = {KvWorkload::kShareGpt};
  o.policies = {KvPolicy::kContiguous};
  o.model = "my-model.gguf";
  ModelConfig m;
  m.name = "my-model";
  m.architecture = "llama";
  m.n_layers = 2;
  m.n_embd = 256;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim_k = m.head_dim_v = 64;
  m.context_length = 4096;
  o.model_config = m;
  // 2 layers x 2 heads x 64 dims x (K + V) x 2 bytes = 1 KiB per token: 1 GiB holds 256
  // sequences of 4096 at f16, and more in int8 (1-byte elements plus a scale per row).
  const std::vector<KvBenchRow> f16 = RunKvBench(o).value();
  ASSERT_EQ(f16.size(), 1u);
  EXPECT_EQ(f16[0].kv_token_slots, 256 * 4096);
  KvDtypeMap int8 = UniformDtypes(KvDtype::kInt8);
  o.kv_dtypes = int8;
  const std::vector<KvBenchRow> q = RunKvBench(o).value();
  EXPECT_GT(q[0].kv_token_slots, f16[0].kv_token_slots);
  EXPECT_NE(FormatKvBenchText(q, o).find("int8 KV"), std::string::npos);
  o.model_config->n_layers = 0;
  EXPECT_FALSE(RunKvBench(o).ok());
}

TEST(KvBenchTest, RejectsBadOptions) {
  KvBenchOptions o = Reduced();
  o.model = "no-such-model";
  EXPECT_FALSE(RunKvBench(o).ok());
  o = Reduced();
  o.kv_memory_bytes = uint64_t{256} << 20;  // Less than one 4096-token sequence (512 MiB).
  EXPECT_FALSE(RunKvBench(o).ok());
  o = Reduced();
  o.policies.clear();
  EXPECT_FALSE(RunKvBench(o).ok());
  o = Reduced();
  o.block_size = 0;
  EXPECT_FALSE(RunKvBench(o).ok());
}

std::vector<KvBenchRow> SmallRows() {
  KvBenchOptions o = Reduced();
  o.num_requests = 20;
  return RunKvBench(o).value();
}

TEST(KvBenchTest, JsonHasOneObjectPerRow) {
  const std::vector<KvBenchRow> rows = SmallRows();
  const nlohmann::json j = nlohmann::json::parse(FormatKvBenchJson(rows));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(j[i]["workload"], rows[i].workload);
    EXPECT_EQ(j[i]["policy"], rows[i].policy);
    EXPECT_EQ(j[i]["peak_concurrent_sequences"], rows[i].peak_concurrent_sequences);
    EXPECT_TRUE(j[i]["mean_concurrent_sequences"].is_number());
    for (const char* key : {"utilization", "prefix_hit_rate"}) {
      EXPECT_GE(j[i][key].get<double>(), 0) << key;
      EXPECT_LE(j[i][key].get<double>(), 1) << key;
    }
    EXPECT_GT(j[i]["capacity_ratio"].get<double>(), 0);
  }
}

TEST(KvBenchTest, TextShowsSettingsAndEveryRow) {
  const std::vector<KvBenchRow> rows = SmallRows();
  const std::string text = FormatKvBenchText(rows, Reduced());
  for (const char* s :
       {"llama-3-8b", "f16 KV", "block 16", "1.00 GiB", "max_model_len 4096", "8192 token slots",
        "2 sequences x 4096", "seed 1", "watermark 0.01", "session FCFS"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  for (const KvBenchRow& r : rows) {
    EXPECT_NE(text.find(r.workload), std::string::npos);
    EXPECT_NE(text.find(r.policy), std::string::npos);
  }
}

TEST(KvBenchTest, SvgDrawsOneBarPerRow) {
  const std::vector<KvBenchRow> rows = SmallRows();
  const std::string svg = FormatKvBenchSvg(rows, Reduced());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(CountOccurrences(svg, "<title>"), rows.size());        // One tooltip per bar.
  EXPECT_EQ(CountOccurrences(svg, "<rect"), 1 + 3 + rows.size());  // Background, legend, bars.
  EXPECT_EQ(CountOccurrences(svg, "<text"), CountOccurrences(svg, "</text>"));
  EXPECT_EQ(CountOccurrences(svg, "stroke-width=\"2\""),
            1 + rows.size());  // Mean ticks and their legend.
  EXPECT_NE(svg.find(">multi_turn<"), std::string::npos);
  EXPECT_NE(svg.find(">paged_prefix<"), std::string::npos);
}

TEST(KvBenchTest, SvgEscapesNames) {
  KvBenchRow r;
  r.workload = "a<b&c";
  r.policy = "\"p\"";
  r.peak_concurrent_sequences = 3;
  const std::string svg = FormatKvBenchSvg({r}, KvBenchOptions());
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
}

}  // namespace
}  // namespace kvengine
