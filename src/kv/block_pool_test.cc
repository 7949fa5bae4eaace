#include "kv/block_pool.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(BlockPoolTest, AllocatesLowestFirstAndRunsOut) {
  BlockPool pool(3);
  bool evicted = true;
  EXPECT_EQ(pool.Allocate(&evicted), 0);
  EXPECT_FALSE(evicted);
  EXPECT_EQ(pool.Allocate(&evicted), 1);
  EXPECT_EQ(pool.Allocate(&evicted), 2);
  EXPECT_EQ(pool.Allocate(&evicted), -1);
  EXPECT_EQ(pool.num_used(), 3);
}

TEST(BlockPoolTest, FreeBlocksAreUsedBeforeCachedOnesAndLruEvictsOldest) {
  BlockPool pool(4);
  bool ev;
  for (int i = 0; i < 4; ++i) pool.Allocate(&ev);
  pool.Release(2, /*keep_cached=*/true);  // Oldest cached.
  pool.Release(0, /*keep_cached=*/true);
  pool.Release(3, /*keep_cached=*/false);
  EXPECT_EQ(pool.num_cached(), 2);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.Allocate(&ev), 3);
  EXPECT_FALSE(ev);
  EXPECT_EQ(pool.Allocate(&ev), 2);
  EXPECT_TRUE(ev);
  EXPECT_EQ(pool.Allocate(&ev), 0);
  EXPECT_TRUE(ev);
}

TEST(BlockPoolTest, AddRefRevivesCachedBlockAndCountsSharing) {
  BlockPool pool(2);
  bool ev;
  const int32_t b = pool.Allocate(&ev);
  pool.Release(b, true);
  EXPECT_EQ(pool.state(b), BlockState::kCached);
  pool.AddRef(b);  // Prefix hit.
  EXPECT_EQ(pool.state(b), BlockState::kUsed);
  EXPECT_EQ(pool.num_cached(), 0);
  pool.AddRef(b);
  EXPECT_EQ(pool.num_shared(), 1);
  EXPECT_EQ(pool.refcount(b), 2);
  pool.Release(b, true);
  EXPECT_EQ(pool.num_shared(), 0);
  pool.Release(b, false);
  EXPECT_EQ(pool.num_free(), 2);
}

TEST(BlockPoolTest, UncacheAndEvictionOrder) {
  BlockPool pool(3);
  bool ev;
  for (int i = 0; i < 3; ++i) pool.Allocate(&ev);
  for (int i = 0; i < 3; ++i) pool.Release(i, true);
  pool.Uncache(1);
  std::vector<int32_t> order;
  pool.ForEachEvictionCandidate([&](int32_t b) {
    order.push_back(b);
    return true;
  });
  EXPECT_EQ(order, (std::vector<int32_t>{0, 2}));
}

TEST(BlockPoolDeathTest, DoubleFreeIsCaught) {
  BlockPool pool(1);
  bool ev;
  const int32_t b = pool.Allocate(&ev);
  pool.Release(b, false);
  EXPECT_DEATH(pool.Release(b, false), "double free");
}

}  // namespace
}  // namespace kvengine
