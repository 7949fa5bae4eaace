#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>

#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;
using testing::Range;

std::unique_ptr<KvCacheManager> Make(int32_t blocks, int block_size = 4, bool prefix = true,
                                     KvDtype dtype = KvDtype::kF32) {
  KvCacheConfig c;
  c.groups = {FullGroup(2, 2, 4, dtype)};
  c.block_size = block_size;
  c.num_blocks = blocks;
  c.enable_prefix_caching = prefix;
  c.model_fingerprint = "test-model";
  auto m = KvCacheManager::Create(c);
  KV_CHECK(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Writes a value that depends on (seq tag, layer, pos, element) into every new position.
void WriteAll(KvCacheManager& m, SeqId s, float tag) {
  std::vector<float> k(8), v(8);
  for (int64_t p = m.NumComputed(s); p < m.NumTokens(s); ++p) {
    for (int l = 0; l < 2; ++l) {
      for (int e = 0; e < 8; ++e) {
        k[size_t(e)] = tag + float(l) * 0.5f + float(p) * 0.01f + float(e) * 1e-4f;
        v[size_t(e)] = -k[size_t(e)];
      }
      m.WriteKv(s, l, p, k.data(), v.data());
    }
  }
  ASSERT_TRUE(m.MarkComputed(s, m.NumTokens(s)).ok());
}

// Adds sequence `s` holding `tokens`, all of them computed (WriteAll with `tag`).
void AddComputed(KvCacheManager& m, SeqId s, std::span<const int32_t> tokens, float tag) {
  ASSERT_TRUE(m.AddSequence(s).ok());
  ASSERT_TRUE(m.Append(s, tokens).ok);
  WriteAll(m, s, tag);
}

float ReadK0(const KvCacheManager& m, SeqId s, int layer, int64_t pos) {
  std::vector<float> k(8), v(8);
  m.ReadKv(s, layer, pos, k.data(), v.data());
  return k[0];
}

TEST(KvCacheManagerTest, AllocatesOnDemandNeverAhead) {
  auto m = Make(8);
  ASSERT_TRUE(m->AddSequence(1).ok());
  EXPECT_TRUE(m->BlockTable(1, 0).empty());
  const auto t = Range(100, 5);
  auto r = m->Append(1, std::span(t).first(1));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(m->BlockTable(1, 0).size(), 1u);
  r = m->Append(1, std::span(t).subspan(1, 3));  // Fills block 0 exactly.
  EXPECT_EQ(m->BlockTable(1, 0).size(), 1u);
  r = m->Append(1, std::span(t).subspan(4, 1));
  EXPECT_EQ(m->BlockTable(1, 0).size(), 2u);
  const KvStats st = m->Stats();
  EXPECT_EQ(st.tokens_stored, 5);
  EXPECT_EQ(st.slots_allocated, 8);
  EXPECT_EQ(st.empty_slots, 3);
}

TEST(KvCacheManagerTest, WriteReadRoundTrip) {
  auto m = Make(8);
  ASSERT_TRUE(m->AddSequence(1).ok());
  const auto t = Range(0, 6);
  ASSERT_TRUE(m->Append(1, t).ok);
  WriteAll(*m, 1, 1.0f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 1, 1, 5), 1.0f + 0.5f + 0.05f);
}

TEST(KvCacheManagerTest, PrefixHitSharesBlocksAndLeavesOneTokenToCompute) {
  auto m = Make(16);
  const auto t = Range(0, 12);  // Three full blocks of 4.
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, t, 1.0f));
  ASSERT_TRUE(m->AddSequence(2).ok());
  const AppendResult r = m->Append(2, t);
  ASSERT_TRUE(r.ok);
  // The whole prompt is cached, but the last block is recomputed so one token produces logits.
  EXPECT_EQ(r.prefix.cached_tokens, 8);
  EXPECT_EQ(r.prefix.miss_partial, 4);
  EXPECT_EQ(r.new_blocks, 1);
  EXPECT_EQ(m->NumComputed(2), 8);
  EXPECT_EQ(m->BlockTable(2, 0)[0], m->BlockTable(1, 0)[0]);
  EXPECT_NE(m->BlockTable(2, 0)[2], m->BlockTable(1, 0)[2]);
  EXPECT_FLOAT_EQ(ReadK0(*m, 2, 0, 7), ReadK0(*m, 1, 0, 7));
  EXPECT_EQ(m->Stats().groups[0].shared_blocks, 2);
  EXPECT_EQ(m->Stats().prefix_hit_tokens, 8);
}

TEST(KvCacheManagerTest, ReleasedBlocksStayFindableUntilEvicted) {
  auto m = Make(4);
  const auto t = Range(0, 9);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, t, 1.0f));
  m->Release(1);
  EXPECT_EQ(m->Stats().groups[0].cached_blocks, 2);  // The partial third block is not cached.
  PrefixLookup l = m->LookupPrefix(t, "", 9);
  EXPECT_EQ(l.cached_tokens, 8);
  // Fill the pool with another sequence: cached blocks get evicted, leaf first.
  ASSERT_TRUE(m->AddSequence(2).ok());
  const auto other = Range(1000, 13);
  ASSERT_TRUE(m->Append(2, std::span(other).first(9)).ok);  // Takes 2 free + evicts block 1.
  l = m->LookupPrefix(t, "", 9);
  EXPECT_EQ(l.cached_tokens, 4);  // The parent survived; its child (the leaf) was evicted.
  EXPECT_EQ(l.miss_evicted, 4);
  EXPECT_EQ(l.miss_partial, 1);
  ASSERT_TRUE(m->Append(2, std::span(other).subspan(9, 4)).ok);
  l = m->LookupPrefix(t, "", 9);
  EXPECT_EQ(l.cached_tokens, 0);
  EXPECT_EQ(l.miss_evicted, 8);
  EXPECT_EQ(m->Stats().groups[0].evictions, 2);
}

TEST(KvCacheManagerTest, MissReasons) {
  auto m = Make(8);
  const auto t = Range(0, 10);
  const PrefixLookup l = m->LookupPrefix(t, "", 10);
  EXPECT_EQ(l.cached_tokens, 0);
  EXPECT_EQ(l.miss_never_cached, 8);
  EXPECT_EQ(l.miss_partial, 2);
}

TEST(KvCacheManagerTest, SaltAndFingerprintIsolateTenants) {
  auto m = Make(16);
  const auto t = Range(0, 9);
  ASSERT_TRUE(m->AddSequence(1, "tenant-a").ok());
  ASSERT_TRUE(m->Append(1, t).ok);
  WriteAll(*m, 1, 1.0f);
  EXPECT_EQ(m->LookupPrefix(t, "tenant-a", 9).cached_tokens, 8);
  EXPECT_EQ(m->LookupPrefix(t, "tenant-b", 9).cached_tokens, 0);
  EXPECT_EQ(m->LookupPrefix(t, "", 9).cached_tokens, 0);
}

TEST(KvCacheManagerTest, DisabledPrefixCachingNeverHits) {
  auto m = Make(16, 4, /*prefix=*/false);
  const auto t = Range(0, 9);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, t, 1.0f));
  ASSERT_TRUE(m->AddSequence(2).ok());
  EXPECT_EQ(m->Append(2, t).prefix.cached_tokens, 0);
  m->Release(1);
  EXPECT_EQ(m->Stats().groups[0].cached_blocks, 0);
}

TEST(KvCacheManagerTest, ForkCopiesSharedPartialBlockOnFirstWrite) {
  auto m = Make(16);
  const auto t = Range(0, 6);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, t, 1.0f));
  ASSERT_TRUE(m->Fork(1, 2).ok());
  EXPECT_EQ(m->Stats().groups[0].shared_blocks, 2);
  const std::vector<int32_t> next = {77};
  AppendResult r = m->Append(2, next);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.cow_copies, 1);
  EXPECT_EQ(m->BlockTable(2, 0)[0], m->BlockTable(1, 0)[0]);  // Full block still shared.
  EXPECT_NE(m->BlockTable(2, 0)[1], m->BlockTable(1, 0)[1]);
  WriteAll(*m, 2, 2.0f);
  // The copy carries the shared positions; the original is untouched by the fork's write.
  EXPECT_FLOAT_EQ(ReadK0(*m, 2, 0, 5), ReadK0(*m, 1, 0, 5));
  EXPECT_FLOAT_EQ(ReadK0(*m, 2, 0, 6), 2.0f + 0.06f);
  // The original now holds its partial block alone: no copy on its next write.
  r = m->Append(1, next);
  EXPECT_EQ(r.cow_copies, 0);
}

TEST(KvCacheManagerTest, ForkBeforeComputeIsRefused) {
  auto m = Make(8);
  const auto t = Range(0, 3);
  ASSERT_TRUE(m->AddSequence(1).ok());
  ASSERT_TRUE(m->Append(1, t).ok);
  EXPECT_FALSE(m->Fork(1, 2).ok());
}

TEST(KvCacheManagerTest, OutOfBlocksChangesNothing) {
  auto m = Make(2);
  ASSERT_TRUE(m->AddSequence(1).ok());
  const auto t = Range(0, 9);
  const KvStats before = m->Stats();
  const AppendResult r = m->Append(1, t);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(m->NumTokens(1), 0);
  EXPECT_EQ(m->Stats().groups[0].free_blocks, before.groups[0].free_blocks);
}

TEST(KvCacheManagerTest, PlanMatchesCommitAndNamesEvictions) {
  auto m = Make(4);
  const auto a = Range(0, 8);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, a, 1.0f));
  m->Release(1);  // Two cached blocks, two free.
  ASSERT_TRUE(m->AddSequence(2).ok());
  ASSERT_TRUE(m->AddSequence(3).ok());
  const auto b = Range(500, 12);
  const auto c = Range(900, 5);
  const AppendRequest reqs[] = {{2, b}, {3, c}};
  const StepPlan p = m->PlanStep(reqs);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.num_fitting, 1);
  EXPECT_EQ(p.new_blocks[0], 3);
  ASSERT_EQ(p.evicted[0].size(), 1u);
  const int32_t leaf = p.evicted[0][0];
  EXPECT_EQ(m->Stats().groups[0].cached_blocks, 2);  // The plan changed nothing.
  ASSERT_TRUE(m->Append(2, b).ok);
  EXPECT_FALSE(m->Append(3, c).ok);
  EXPECT_EQ(m->group(0).pool().state(leaf), BlockState::kUsed);
  EXPECT_EQ(m->LookupPrefix(a, "", 8).cached_tokens, 4);
}

TEST(KvCacheManagerTest, PlanCountsRevivedHitsAgainstCapacity) {
  auto m = Make(3);
  const auto a = Range(0, 8);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, a, 1.0f));
  m->Release(1);  // Blocks 0,1 cached, 1 free.
  ASSERT_TRUE(m->AddSequence(2).ok());
  const auto a2 = Range(0, 9);  // Hits 8 tokens, needs 1 new block.
  const AppendRequest reqs[] = {{2, a2}};
  StepPlan p = m->PlanStep(reqs);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.cached_tokens[0], 8);
  EXPECT_EQ(p.new_blocks[0], 1);
  EXPECT_EQ(p.revived_blocks[0], 2);  // Both cached blocks leave the evictable set.
  EXPECT_TRUE(p.evicted[0].empty());
  ASSERT_TRUE(m->Append(2, a2).ok);
  EXPECT_EQ(m->Stats().groups[0].free_blocks, 0);
}

TEST(KvCacheManagerTest, TruncateRewritesInPlaceOrCopiesWhenShared) {
  auto m = Make(16);
  const auto t = Range(0, 8);
  ASSERT_NO_FATAL_FAILURE(AddComputed(*m, 1, t, 1.0f));
  ASSERT_TRUE(m->Truncate(1, 6).ok());
  EXPECT_EQ(m->BlockTable(1, 0).size(), 2u);
  // Block 1 was cached (full); truncating into it removes it from the index.
  EXPECT_EQ(m->LookupPrefix(t, "", 8).cached_tokens, 4);
  const std::vector<int32_t> x = {42, 43};
  ASSERT_EQ(m->Append(1, x).cow_copies, 0);
  WriteAll(*m, 1, 3.0f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 1, 0, 6), 3.0f + 0.06f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 1, 0, 5), 1.0f + 0.05f);
  // Shared: fork then truncate the fork into the shared block.
  ASSERT_TRUE(m->Fork(1, 2).ok());
  ASSERT_TRUE(m->Truncate(2, 5).ok());
  ASSERT_EQ(m->Append(2, x).cow_copies, 1);
  WriteAll(*m, 2, 5.0f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 1, 0, 5), 1.0f + 0.05f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 2, 0, 5), 5.0f + 0.05f);
  EXPECT_FLOAT_EQ(ReadK0(*m, 2, 0, 4), 1.0f + 0.04f);
}

TEST(KvCacheManagerTest, QuantizedDtypesRoundTripWithinCodecError) {
  for (KvDtype d : kAllKvDtypes) {
    auto m = Make(8, 4, true, d);
    ASSERT_TRUE(m->AddSequence(1).ok());
    const auto t = Range(0, 5);
    ASSERT_TRUE(m->Append(1, t).ok);
    WriteAll(*m, 1, 1.0f);
    const float got = ReadK0(*m, 1, 1, 4);
    EXPECT_NEAR(got, 1.0f + 0.5f + 0.04f, 0.15f) << KvDtypeName(d);
  }
}

TEST(KvCacheManagerTest, CreateRejectsBadConfigs) {
  KvCacheConfig c;
  EXPECT_FALSE(KvCacheManager::Create(c).ok());
  c.groups = {FullGroup(2, 2, 4)};
  c.num_blocks = 4;
  c.block_size = 0;
  EXPECT_FALSE(KvCacheManager::Create(c).ok());
  c.block_size = 16;
  c.groups.push_back(FullGroup(1, 2, 4, KvDtype::kF16, 1));  // Layer 1 twice.
  EXPECT_FALSE(KvCacheManager::Create(c).ok());
  c.groups.pop_back();
  c.num_blocks = 0;
  c.memory_bytes = 10;  // Smaller than one block.
  EXPECT_FALSE(KvCacheManager::Create(c).ok());
}

}  // namespace
}  // namespace kvengine
