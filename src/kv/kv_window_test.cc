// Sliding-window groups: blocks leave as the window moves, sinks stay, hybrid models mix groups.
#include <gtest/gtest.h>

#include <algorithm>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;
using testing::Range;
using testing::WindowGroup;

std::unique_ptr<KvCacheManager> Make(std::vector<KvGroupSpec> groups, int32_t blocks, int b) {
  KvCacheConfig c;
  c.groups = std::move(groups);
  c.block_size = b;
  c.num_blocks = blocks;
  auto m = KvCacheManager::Create(c);
  KV_CHECK(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

int64_t Held(const KvCacheManager& m, SeqId s, int g) {
  const auto t = m.BlockTable(s, g);
  return std::count_if(t.begin(), t.end(), [](int32_t b) { return b >= 0; });
}

// Decodes `n` tokens one at a time and returns the most blocks held in group g.
int64_t DecodePeak(KvCacheManager& m, SeqId s, int64_t n, int g) {
  int64_t peak = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t tok = static_cast<int32_t>(i % 50);
    KV_CHECK(m.Append(s, std::span(&tok, 1)).ok);
    peak = std::max(peak, Held(m, s, g));
    KV_CHECK(m.MarkComputed(s, m.NumTokens(s)).ok());
  }
  return peak;
}

TEST(KvWindowTest, BlocksOutsideTheWindowReturnToThePool) {
  for (int b : {1, 4, 16}) {
    for (int w : {1, 5, 16, 33}) {
      auto m = Make({WindowGroup(1, 1, 2, w)}, 512, b);
      ASSERT_TRUE(m->AddSequence(1).ok());
      const int64_t n = 300;
      const int64_t peak = DecodePeak(*m, 1, n, 0);
      // The exact bound the planner uses, and the looser bound stated in the docs.
      EXPECT_EQ(peak, BlocksPerSequence(m->group(0).spec(), b, n)) << "b=" << b << " w=" << w;
      EXPECT_LE(peak * b, w + 2 * b);
      EXPECT_EQ(m->Stats().groups[0].used_blocks, Held(*m, 1, 0));
    }
  }
}

TEST(KvWindowTest, SinksAreKeptAndBounded) {
  const int b = 4, w = 8, sinks = 5;
  auto m = Make({WindowGroup(1, 1, 2, w, sinks)}, 512, b);
  ASSERT_TRUE(m->AddSequence(1).ok());
  const int64_t peak = DecodePeak(*m, 1, 200, 0);
  EXPECT_LE(peak * b, (sinks + b - 1) / b * b + w + b);
  EXPECT_EQ(peak, BlocksPerSequence(m->group(0).spec(), b, 200));
  const auto t = m->BlockTable(1, 0);
  EXPECT_GE(t[0], 0);
  EXPECT_GE(t[1], 0);  // Sinks cover blocks 0 and 1 (5 tokens).
  EXPECT_LT(t[2], 0);
}

TEST(KvWindowTest, HybridModelKeepsFullLayersAndBoundsWindowLayers) {
  // Gemma-2 style: layers 0,2 windowed, 1,3 global.
  KvGroupSpec win = WindowGroup(2, 1, 2, 8);
  win.layers = {0, 2};
  KvGroupSpec full = FullGroup(2, 1, 2);
  full.layers = {1, 3};
  auto m = Make({win, full}, 256, 4);
  ASSERT_TRUE(m->AddSequence(1).ok());
  DecodePeak(*m, 1, 100, 0);
  EXPECT_EQ(Held(*m, 1, 1), 25);
  EXPECT_LE(Held(*m, 1, 0), 3);
  std::vector<float> k(2), v(2);
  m->ReadKv(1, 1, 0, k.data(), v.data());  // Global layer still has position 0.
}

TEST(KvWindowTest, PrefixHitNeedsOnlyTheWindowBlocks) {
  const int b = 4;
  auto m = Make({WindowGroup(1, 1, 2, 8), FullGroup(1, 1, 2, KvDtype::kF32, 1)}, 64, b);
  const auto t = Range(0, 40);
  ASSERT_TRUE(m->AddSequence(1).ok());
  ASSERT_TRUE(m->Append(1, t).ok);
  ASSERT_TRUE(m->MarkComputed(1, 40).ok());
  m->Release(1);
  ASSERT_TRUE(m->AddSequence(2).ok());
  const AppendResult r = m->Append(2, t);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.prefix.cached_tokens, 36);
  // The windowed group adopted only blocks that the next query can see.
  const auto wt = m->BlockTable(2, 0);
  EXPECT_LT(wt[0], 0);
  EXPECT_GE(wt[8], 0);
  EXPECT_GE(wt[7], 0);  // Positions 28..31 are inside the window of position 36.
  EXPECT_LT(wt[6], 0);
}

TEST(KvWindowTest, TruncateBelowTheReleasedWindowIsAnError) {
  auto m = Make({WindowGroup(1, 1, 2, 4)}, 64, 4);
  ASSERT_TRUE(m->AddSequence(1).ok());
  DecodePeak(*m, 1, 40, 0);
  EXPECT_FALSE(m->Truncate(1, 10).ok());
  EXPECT_FALSE(m->Truncate(1, 38).ok());  // Position 38 would see 35, already released.
  EXPECT_TRUE(m->Truncate(1, 39).ok());
}

}  // namespace
}  // namespace kvengine
