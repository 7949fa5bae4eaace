#include "kv/pool_sizing.h"

#include <gtest/gtest.h>

#include "kv/block_layout.h"
#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;
using testing::WindowGroup;

TEST(PoolSizingTest, FullGroupBlocksPerSequence) {
  const KvGroupSpec s = FullGroup(1, 1, 8);
  EXPECT_EQ(BlocksPerSequence(s, 16, 0), 0);
  EXPECT_EQ(BlocksPerSequence(s, 16, 1), 1);
  EXPECT_EQ(BlocksPerSequence(s, 16, 16), 1);
  EXPECT_EQ(BlocksPerSequence(s, 16, 17), 2);
}

TEST(PoolSizingTest, WindowBoundIsSmallForLongSequences) {
  const KvGroupSpec s = WindowGroup(1, 1, 8, 4096);
  EXPECT_EQ(BlocksPerSequence(s, 16, 100), 7);
  EXPECT_EQ(BlocksPerSequence(s, 16, 1'000'000), 4096 / 16 + 1);
  const KvGroupSpec sinks = WindowGroup(1, 1, 8, 4096, 4);
  EXPECT_EQ(BlocksPerSequence(sinks, 16, 1'000'000), 4096 / 16 + 2);
}

TEST(PoolSizingTest, SingleGroupTakesWholeBlocksOfTheBudget) {
  const std::vector<KvGroupSpec> g = {FullGroup(32, 32, 128, KvDtype::kF16)};
  const auto s = SizePool(g, 16, 24ull << 30, 4096);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bytes_per_block[0], 16u * 524288u);
  EXPECT_EQ(s->num_blocks[0], 3072);  // 24 GiB / 8 MiB.
  EXPECT_EQ(s->total_bytes, 24ull << 30);
}

TEST(PoolSizingTest, GroupsSplitByFullContextNeedAndNeverExceedBudget) {
  const std::vector<KvGroupSpec> g = {WindowGroup(5, 4, 64, 1024, 0, KvDtype::kF16),
                                      FullGroup(1, 4, 64, KvDtype::kF16, 5)};
  const uint64_t mem = 1ull << 30;
  const auto s = SizePool(g, 16, mem, 32768);
  ASSERT_TRUE(s.ok());
  EXPECT_LE(s->total_bytes, mem);
  EXPECT_EQ(s->blocks_per_seq[0], 1024 / 16 + 1);
  EXPECT_EQ(s->blocks_per_seq[1], 2048);
  // Both groups fit the same number of full-length sequences (to within one).
  const int64_t seqs0 = s->num_blocks[0] / s->blocks_per_seq[0];
  const int64_t seqs1 = s->num_blocks[1] / s->blocks_per_seq[1];
  EXPECT_LE(std::abs(seqs0 - seqs1), 1);
}

TEST(PoolSizingTest, TooSmallBudgetIsAnError) {
  const std::vector<KvGroupSpec> g = {FullGroup(32, 32, 128, KvDtype::kF16)};
  EXPECT_FALSE(SizePool(g, 16, 1 << 20, 4096).ok());
}

}  // namespace
}  // namespace kvengine
