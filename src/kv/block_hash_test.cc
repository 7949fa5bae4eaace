#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvengine {
namespace {

TEST(BlockHashTest, DeterministicAndChained) {
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const std::vector<int32_t> b = {1, 2, 3, 5};
  const BlockHash root = PrefixRootHash("model|f16|16", "");
  EXPECT_EQ(ChainBlockHash(root, a), ChainBlockHash(root, a));
  EXPECT_FALSE(ChainBlockHash(root, a) == ChainBlockHash(root, b));
  // The same tokens under a different parent hash differently.
  const BlockHash h1 = ChainBlockHash(root, a);
  EXPECT_FALSE(ChainBlockHash(h1, a) == ChainBlockHash(root, a));
}

TEST(BlockHashTest, SaltAndNamespaceSeparate) {
  EXPECT_FALSE(PrefixRootHash("m", "tenant-a") == PrefixRootHash("m", "tenant-b"));
  EXPECT_FALSE(PrefixRootHash("m", "") == PrefixRootHash("n", ""));
  // Length prefixes: moving bytes between namespace and salt changes the key.
  EXPECT_FALSE(PrefixRootHash("ab", "c") == PrefixRootHash("a", "bc"));
}

TEST(BlockHashTest, StableAcrossProcesses) {
  // A fixed vector pins the encoding: instances sharing a remote tier must agree on it.
  const BlockHash root = PrefixRootHash("ns", "salt");
  const std::vector<int32_t> t = {0, -1, 65536, 7};
  EXPECT_EQ(ChainBlockHash(root, t).Hex().size(), 64u);
  EXPECT_EQ(ChainBlockHash(root, t).Hex(), ChainBlockHash(PrefixRootHash("ns", "salt"), t).Hex());
}

}  // namespace
}  // namespace kvengine
