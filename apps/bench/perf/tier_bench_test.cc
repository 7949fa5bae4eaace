// The tier benchmark on the tiny synthetic model with RAM and disk tiers (the Redis row is
// covered by tools/bench_tiers_test.sh against a real redis-server): every row runs and is
// served from where it says, the targets are derived from the rows, and the reports carry them.
#include "bench/perf/tier_bench.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "synth/synth_test_util.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"
#include "report/perf_reports.h"

namespace kvengine {
namespace {

class TierBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.File("tiny.gguf");
    ASSERT_TRUE(WriteSyntheticModel(*FindSyntheticPreset("tiny"), path).ok());
    Result<std::unique_ptr<GgufFile>> f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    file_ = std::move(*f);
    Result<std::unique_ptr<Model>> m = LoadModel(file_, "tiny");
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::shared_ptr<const Model>(std::move(*m));
  }

  TierBenchOptions Small() const {
    TierBenchOptions o;
    o.prompt_tokens = 100;  // 6 reusable blocks of 16; 4 tokens always computed.
    // One run a row: after measuring a tier, the engine's cost model may rightly prefer
    // recomputing to reading tiny blocks one file at a time (this model's KV is 256 bytes a
    // token), which would make a second disk run a recompute.
    o.repeat = 1;
    o.raw_passes = 1;
    o.engine.threads = 1;
    o.engine.kv.memory_bytes = 8 << 20;
    o.engine.kv.max_model_len = 256;
    o.engine.tiers.ram_bytes = 8 << 20;
    o.engine.tiers.disk_path = dir_.File("disk");
    o.engine.tiers.disk_bytes = 64 << 20;
    return o;
  }

  synth_test::ScopedTempDir dir_;
  std::shared_ptr<GgufFile> file_;
  std::shared_ptr<const Model> model_;
};

TEST_F(TierBenchTest, EveryRowIsServedFromWhereItSays) {
  std::vector<std::string> lines;
  Result<TierBenchResult> r =
      RunTierBench(model_, "tiny", Small(), [&](std::string_view l) { lines.emplace_back(l); });
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), size_t(kNumTierScenarios));
  EXPECT_EQ(r->prefix_blocks, 6);
  const TierBenchRow& recompute = r->rows[size_t(TierScenario::kRecompute)];
  EXPECT_EQ(recompute.prompt_tokens_computed, 100);
  EXPECT_EQ(recompute.ttft_runs_s.size(), 1u);
  for (TierScenario s : {TierScenario::kPool, TierScenario::kRam, TierScenario::kDisk}) {
    const TierBenchRow& row = r->rows[size_t(s)];
    SCOPED_TRACE(TierScenarioName(s));
    EXPECT_TRUE(row.served) << row.note;
    EXPECT_EQ(row.ttft_runs_s.size(), 1u);
    EXPECT_EQ(row.prompt_tokens_computed, 4);
    EXPECT_EQ(row.cached_tokens, 96);
    EXPECT_EQ(row.blocks, 6u);  // One group.
    EXPECT_GT(row.speedup_vs_recompute, 0);
  }
  const TierBenchRow& ram = r->rows[size_t(TierScenario::kRam)];
  const TierBenchRow& disk = r->rows[size_t(TierScenario::kDisk)];
  EXPECT_EQ(ram.bytes, 6 * r->kv_bytes_per_token * 16);  // Payloads.
  EXPECT_EQ(disk.bytes, ram.bytes + 6 * 96);             // Records: a 96-byte header each.
  EXPECT_EQ(ram.raw.method, "memcpy");
  EXPECT_EQ(ram.raw.count, 6);
  EXPECT_GT(ram.raw.gb_per_s, 0);
  EXPECT_GT(disk.raw.gb_per_s, 0);
  EXPECT_GT(ram.tier_gb_per_s, 0);
  EXPECT_GT(disk.tier_gb_per_s, 0);
  EXPECT_DOUBLE_EQ(disk.fraction_of_raw, disk.tier_gb_per_s / disk.raw.gb_per_s);
  const TierBenchRow& redis = r->rows[size_t(TierScenario::kRedis)];
  EXPECT_TRUE(redis.skipped);
  EXPECT_NE(redis.note.find("--kv-redis"), std::string::npos);
  // Only the engine's own files remain in the disk tier's directory (the raw file is gone).
  EXPECT_FALSE(std::filesystem::exists(dir_.File("disk/raw-read-bandwidth.bin")));
  EXPECT_FALSE(lines.empty());

  ASSERT_EQ(r->targets.size(), 5u);
  EXPECT_FALSE(r->targets[4].judged);  // Redis did not run.
  EXPECT_TRUE(r->targets[0].judged);
  EXPECT_EQ(r->targets[0].met, r->targets[0].value >= 10);

  const nlohmann::json j = nlohmann::json::parse(FormatTierBenchJson(*r));
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j[0]["scenario"], "recompute");
  EXPECT_EQ(j[4]["scenario"], "redis");
  EXPECT_EQ(j[4]["skipped"], true);
  EXPECT_EQ(j[3]["prompt_tokens_computed"], 4);
  const std::string text = FormatTierBenchText(*r);
  EXPECT_NE(text.find("(d) disk"), std::string::npos);
  EXPECT_NE(text.find("targets (offload tiers)"), std::string::npos);
  // The chart: a TTFT bar per row that ran (redis skipped), two rate bars per tier that ran.
  const std::string svg = FormatTierBenchSvg(*r);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(CountOccurrences(svg, "<title>"), 4u + 2u * 2u);
  EXPECT_EQ(svg.find("<title>redis"), std::string::npos);
  EXPECT_NE(svg.find(">skipped<"), std::string::npos);
  EXPECT_NE(svg.find("<title>disk: TTFT "), std::string::npos);
}

TEST_F(TierBenchTest, RepeatedRowsReportTheMedianRun) {
  TierBenchOptions o = Small();
  o.repeat = 3;
  o.recompute_repeat = 2;  // A second random prompt first, then the measured one.
  Result<TierBenchResult> r = RunTierBench(model_, "tiny", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TierBenchRow& recompute = r->rows[size_t(TierScenario::kRecompute)];
  ASSERT_EQ(recompute.ttft_runs_s.size(), 2u);
  EXPECT_TRUE(recompute.served) << recompute.note;
  EXPECT_DOUBLE_EQ(recompute.ttft_s, 0.5 * (recompute.ttft_runs_s[0] + recompute.ttft_runs_s[1]));
  for (TierScenario s : {TierScenario::kPool, TierScenario::kRam}) {
    const TierBenchRow& row = r->rows[size_t(s)];
    SCOPED_TRACE(TierScenarioName(s));
    ASSERT_EQ(row.ttft_runs_s.size(), 3u);
    EXPECT_TRUE(row.served) << row.note;
    std::vector<double> sorted = row.ttft_runs_s;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(row.ttft_s, sorted[1]);
  }
}

TEST_F(TierBenchTest, RefusesADiskDirectoryWithOldBlocks) {
  TierBenchOptions o = Small();
  std::filesystem::create_directories(o.engine.tiers.disk_path);
  std::ofstream(o.engine.tiers.disk_path + "/old.kvb") << "x";
  Result<TierBenchResult> r = RunTierBench(model_, "tiny", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not empty"), std::string::npos);
  o = Small();
  o.prompt_tokens = 16;  // Not one reusable block.
  EXPECT_EQ(RunTierBench(model_, "tiny", o).status().code(), StatusCode::kOutOfRange);
}

TEST(TierBenchTargetsTest, JudgesOnlyRowsThatRanAndWereServed) {
  std::vector<TierBenchRow> rows(kNumTierScenarios);
  for (int s = 0; s < kNumTierScenarios; ++s) rows[size_t(s)].scenario = TierScenario(s);
  rows[0].ttft_s = 10;
  rows[size_t(TierScenario::kRam)].ttft_s = 0.5;
  rows[size_t(TierScenario::kRam)].speedup_vs_recompute = 20;
  rows[size_t(TierScenario::kRam)].tier_gb_per_s = 7;
  rows[size_t(TierScenario::kRam)].raw.gb_per_s = 10;
  rows[size_t(TierScenario::kRam)].fraction_of_raw = 0.7;
  rows[size_t(TierScenario::kDisk)].ttft_s = 4;
  rows[size_t(TierScenario::kDisk)].speedup_vs_recompute = 2.5;
  rows[size_t(TierScenario::kDisk)].served = false;
  rows[size_t(TierScenario::kRedis)].skipped = true;
  const std::vector<TierBenchTarget> t = TierBenchTargets(rows);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_TRUE(t[0].judged && t[0].met);   // RAM 20x >= 10x.
  EXPECT_FALSE(t[1].judged);              // Disk not served by the disk tier.
  EXPECT_TRUE(t[2].judged && !t[2].met);  // RAM 0.7 < 0.8 of memcpy.
  EXPECT_FALSE(t[3].judged);
  EXPECT_FALSE(t[4].judged);  // Redis skipped.
}

}  // namespace
}  // namespace kvengine
