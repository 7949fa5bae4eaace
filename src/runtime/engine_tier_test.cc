// The engine over offload tiers: a prompt whose blocks left the pool comes back from RAM, from
// disk (also after a restart) and is answered with exactly the tokens of a cold run, with fewer
// prompt tokens computed.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kvengine/engine.h"
#include "runtime/engine_test_util.h"

namespace kvengine {
namespace {

using namespace engine_test;  // NOLINT: test helpers.

RequestParams Request(int prompt_len, int salt) { return GreedyRequest(prompt_len, 8, salt); }

std::vector<int32_t> RunToEnd(Engine& engine, EventLog& log, const RequestParams& p) {
  auto id = engine.Submit(p, log.Callback());
  KV_CHECK(id.ok()) << id.status().ToString();
  KV_CHECK(log.WaitFinals(*id, 1));
  return log.Tokens(*id);
}

std::string TempDir(const char* name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  return dir.string();
}

// BaseOptions(64) with a 64 MiB disk tier in the fresh directory TempDir(dir).
EngineOptions OptionsWithDiskTier(const char* dir) {
  EngineOptions o = BaseOptions(64);
  o.tiers.disk_path = TempDir(dir);
  o.tiers.disk_bytes = 64 << 20;
  return o;
}

// `p`'s tokens on a new engine over `o`, stopped at the end; `stats`: its stats before that.
std::vector<int32_t> RunOnNewEngine(std::shared_ptr<const Model> model, const EngineOptions& o,
                                    const RequestParams& p, EngineStats* stats = nullptr) {
  EventLog log;
  auto engine = MakeEngine(std::move(model), o);
  engine->Start();
  std::vector<int32_t> tokens = RunToEnd(*engine, log, p);
  if (stats != nullptr) *stats = engine->Stats();
  return tokens;
}

TEST(EngineTierTest, EvictedPrefixComesBackFromRamWithIdenticalTokens) {
  auto model = TinyModel();
  EngineOptions o = BaseOptions(24);
  o.tiers.ram_bytes = 64 << 20;
  auto engine = MakeEngine(model, o);
  engine->Start();
  EventLog log;
  const RequestParams a = Request(200, 1);
  const std::vector<int32_t> cold = RunToEnd(*engine, log, a);
  EXPECT_EQ(cold, RunAlone(*model, a));
  // Another long prompt needs most of the 24 blocks: a's cached blocks are evicted to RAM.
  RunToEnd(*engine, log, Request(300, 2));
  const EngineStats mid = engine->Stats();
  EXPECT_GT(mid.tiers.demotions, 0u);
  const int64_t computed_before = mid.prompt_tokens_computed_total;
  EXPECT_EQ(RunToEnd(*engine, log, a), cold);
  const EngineStats s = engine->Stats();
  ASSERT_TRUE(s.has_tiers);
  EXPECT_GT(s.kv.prefix_tier_hit_tokens, 0);
  EXPECT_GT(s.tiers.prefix_hit_blocks[size_t(TierKind::kRam)], 0u);
  EXPECT_GT(s.tiers.tiers[size_t(TierKind::kRam)].bytes_read, 0u);
  // Only the tokens neither the pool nor RAM held were computed.
  EXPECT_LT(s.prompt_tokens_computed_total - computed_before, 200 - s.kv.prefix_tier_hit_tokens + 16);
}

// Swap-based preemption: preempted sequences' full blocks are evicted into the RAM tier and copied
// back on re-admission instead of being recomputed; every request still decodes exactly what it
// decodes alone.
TEST(EngineTierTest, PreemptedSequencesSwapBackInFromRam) {
  auto model = TinyModel();
  EngineOptions o = BaseOptions(20);
  o.sched.max_num_batched_tokens = 32;
  o.tiers.ram_bytes = 64 << 20;
  auto engine = MakeEngine(model, o);
  EventLog log;
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(GreedyRequest(90 + 20 * i, 40, 10 + i));
  ASSERT_NO_FATAL_FAILURE(ExpectSameTokensAsAlone(*engine, log, *model, reqs));
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().requests_running == 0; }));
  const EngineStats s = engine->Stats();
  EXPECT_GT(s.preemptions_total, 0);
  EXPECT_GT(s.tier_swap_ins_total, 0);
  EXPECT_GT(s.tiers.prefix_hit_blocks[size_t(TierKind::kRam)], 0u);
  EXPECT_EQ(UsedBlocks(s), 0);
}

TEST(EngineTierTest, DiskTierServesAfterOffloadAndAfterARestart) {
  auto model = TinyModel();
  const EngineOptions o = OptionsWithDiskTier("engine_tier_disk");
  const RequestParams a = Request(180, 3);
  std::vector<int32_t> cold;
  {
    auto engine = MakeEngine(model, o);
    engine->Start();
    EventLog log;
    cold = RunToEnd(*engine, log, a);
    ASSERT_TRUE(engine->Offload(OffloadTo::kDisk).ok());
    const int64_t before = engine->Stats().prompt_tokens_computed_total;
    EXPECT_EQ(RunToEnd(*engine, log, a), cold);
    const EngineStats s = engine->Stats();
    EXPECT_GT(s.tiers.prefix_hit_blocks[size_t(TierKind::kDisk)], 0u);
    EXPECT_GT(s.tiers.tiers[size_t(TierKind::kDisk)].bytes_read, 0u);
    EXPECT_EQ(s.tiers.prefetches_issued, 2u);  // Cold run (nothing found) and this one.
    EXPECT_LE(s.prompt_tokens_computed_total - before, 180 - 160);
  }
  // A new engine over the same directory: the prompt is answered from disk.
  EngineStats s;
  EXPECT_EQ(RunOnNewEngine(model, o, a, &s), cold);
  EXPECT_GT(s.tiers.prefix_hit_blocks[size_t(TierKind::kDisk)], 0u);
  EXPECT_LE(s.prompt_tokens_computed_total, 180 - 160);
}

TEST(EngineTierTest, CorruptDiskFilesAreMissesNotWrongTokens) {
  auto model = TinyModel();
  const EngineOptions o = OptionsWithDiskTier("engine_tier_corrupt");
  const RequestParams a = Request(180, 4);
  // Stop persists the cached blocks to disk.
  const std::vector<int32_t> cold = RunOnNewEngine(model, o, a);
  // Flip one byte in the middle of every stored file.
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(o.tiers.disk_path)) {
    if (!f.is_regular_file() || f.path().extension() != ".kvb") continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(std::streamoff(f.file_size() / 2));
    char c = 0;
    io.read(&c, 1);
    c = char(c ^ 0x5a);
    io.seekp(std::streamoff(f.file_size() / 2));
    io.write(&c, 1);
    ++files;
  }
  ASSERT_GT(files, 0);
  EngineStats s;
  EXPECT_EQ(RunOnNewEngine(model, o, a, &s), cold);
  EXPECT_EQ(s.tiers.prefix_hit_blocks[size_t(TierKind::kDisk)], 0u);
  EXPECT_GT(s.tiers.tiers[size_t(TierKind::kDisk)].corrupt, 0u);
  EXPECT_EQ(s.prompt_tokens_computed_total, 180);
}

}  // namespace
}  // namespace kvengine

namespace kvengine {
namespace {

// The accuracy cost of cold-tier compression: a prefix served from an int8 disk tier under an
// f16 pool, against the same prompt computed. Measured on the first generated token's top
// logprobs (the only difference in its inputs is the re-encoded prefix KV).
TEST(EngineTierTest, Int8ColdTierCostsLittleAccuracy) {
  if (!std::filesystem::exists(StoriesPath())) GTEST_SKIP() << "no " << StoriesPath();
  auto model = StoriesModel();
  EngineOptions o = OptionsWithDiskTier("engine_tier_int8");
  o.tiers.cold_dtype = KvDtype::kInt8;
  auto engine = MakeEngine(model, o);
  engine->Start();
  EventLog log;
  RequestParams p = Request(200, 5);
  p.max_tokens = 1;
  p.logprobs = kMaxLogprobs;
  auto first = [&](RequestId id) {
    for (const RequestEvent& e : log.Events(id)) {
      if (e.has_token) return e;
    }
    return RequestEvent{};
  };
  auto a = engine->Submit(p, log.Callback());
  ASSERT_TRUE(a.ok() && log.WaitFinals(*a, 1));
  ASSERT_TRUE(engine->Offload(OffloadTo::kDisk).ok());
  auto b = engine->Submit(p, log.Callback());
  ASSERT_TRUE(b.ok() && log.WaitFinals(*b, 1));
  const EngineStats s = engine->Stats();
  ASSERT_GT(s.tiers.prefix_hit_blocks[size_t(TierKind::kDisk)], 0u);
  // Bytes on disk: int8 rows plus scales, about half of f16.
  const TierCounters& disk = s.tiers.tiers[size_t(TierKind::kDisk)];
  ASSERT_GT(disk.blocks, 0u);
  EXPECT_LT(double(disk.bytes) / double(disk.blocks), 0.7 * double(s.kv.groups[0].bytes_per_block));
  const RequestEvent ea = first(*a), eb = first(*b);
  double max_diff = 0;
  for (const TokenLogprob& x : ea.top_logprobs) {
    for (const TokenLogprob& y : eb.top_logprobs) {
      if (x.token == y.token) max_diff = std::max(max_diff, double(std::abs(x.logprob - y.logprob)));
    }
  }
  std::printf("int8 cold tier: max |delta logprob| over the top %d = %.5f\n", kMaxLogprobs,
              max_diff);
  EXPECT_LT(max_diff, 0.05);
  EXPECT_EQ(ea.token, eb.token);
}

}  // namespace
}  // namespace kvengine
