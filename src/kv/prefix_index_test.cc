#include "kv/prefix_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvengine {
namespace {

BlockHash H(int i) {
  const std::vector<int32_t> t = {i};
  return ChainBlockHash(PrefixRootHash("", ""), t);
}

TEST(PrefixIndexTest, InsertFindErase) {
  PrefixIndex index(8, 4);
  EXPECT_EQ(index.Find(H(1)), -1);
  EXPECT_TRUE(index.Insert(H(1), 3));
  EXPECT_EQ(index.Find(H(1)), 3);
  EXPECT_TRUE(index.IsIndexed(3));
  // Second block with the same hash is not indexed.
  EXPECT_FALSE(index.Insert(H(1), 4));
  EXPECT_FALSE(index.IsIndexed(4));
  index.Erase(3, /*evicted=*/true);
  EXPECT_EQ(index.Find(H(1)), -1);
  EXPECT_TRUE(index.WasEvicted(H(1)));
  EXPECT_FALSE(index.WasEvicted(H(2)));
}

TEST(PrefixIndexTest, HistoryIsBounded) {
  PrefixIndex index(16, 2);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(index.Insert(H(i), i));
    index.Erase(i, true);
  }
  EXPECT_FALSE(index.WasEvicted(H(0)));
  EXPECT_FALSE(index.WasEvicted(H(1)));
  EXPECT_TRUE(index.WasEvicted(H(2)));
  EXPECT_TRUE(index.WasEvicted(H(3)));
  // Erasing without eviction (e.g. a truncated block) does not count as evicted.
  ASSERT_TRUE(index.Insert(H(9), 9));
  index.Erase(9, false);
  EXPECT_FALSE(index.WasEvicted(H(9)));
}

}  // namespace
}  // namespace kvengine
