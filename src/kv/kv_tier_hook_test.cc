// KvCacheManager with a tier hook: evicted blocks are handed down with their bytes, completed
// blocks are announced, and a lookup that misses the pool adopts blocks a tier fills — with the
// very bytes that left the pool.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;
using testing::Range;
using testing::WindowGroup;

// A tier that keeps every block it is given, unbounded; counts calls and checks pins.
class MapTier final : public KvTierHook {
 public:
  using Key = std::pair<int, std::string>;
  void OnEvict(int g, const BlockHash& h, std::span<const uint8_t> bytes) override {
    ++evictions;
    ASSERT_EQ(pins.count({g, h.Hex()}), 0u) << "a pinned block's hash was evicted from the pool";
    blocks[{g, h.Hex()}].assign(bytes.begin(), bytes.end());
  }
  void OnComplete(int g, const BlockHash& h, std::span<const uint8_t> bytes) override {
    ++completions;
    completed[{g, h.Hex()}].assign(bytes.begin(), bytes.end());
  }
  bool Has(int g, const BlockHash& h) const override {
    return enabled && blocks.count({g, h.Hex()}) != 0;
  }
  bool Fill(int g, const BlockHash& h, std::span<uint8_t> dst) override {
    EXPECT_EQ(pins.count(Key{g, h.Hex()}), 1u) << "Fill of an unpinned block";
    auto it = blocks.find({g, h.Hex()});
    if (it == blocks.end() || it->second.size() != dst.size()) return false;
    std::copy(it->second.begin(), it->second.end(), dst.begin());
    ++fills;
    return true;
  }
  void Pin(int g, const BlockHash& h) override { ++pins[{g, h.Hex()}]; }
  void Unpin(int g, const BlockHash& h) override {
    if (--pins[{g, h.Hex()}] == 0) pins.erase({g, h.Hex()});
  }

  bool enabled = true;
  int evictions = 0, completions = 0, fills = 0;
  std::map<Key, std::vector<uint8_t>> blocks, completed;
  std::map<Key, int> pins;
};

std::unique_ptr<KvCacheManager> Make(std::vector<KvGroupSpec> groups, int32_t blocks) {
  KvCacheConfig c;
  c.groups = std::move(groups);
  c.block_size = 4;
  c.num_blocks = blocks;
  c.model_fingerprint = "tier-test";
  auto m = KvCacheManager::Create(c);
  KV_CHECK(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Writes KV that depends on (tag, layer, pos, element) into every uncomputed position.
void WriteAll(KvCacheManager& m, SeqId s, float tag, int layers) {
  std::vector<float> k(8), v(8);
  for (int64_t p = m.NumComputed(s); p < m.NumTokens(s); ++p) {
    for (int l = 0; l < layers; ++l) {
      for (int e = 0; e < 8; ++e) {
        k[size_t(e)] = tag + float(l) * 0.5f + float(p) * 0.01f + float(e) * 1e-4f;
        v[size_t(e)] = -k[size_t(e)];
      }
      m.WriteKv(s, l, p, k.data(), v.data());
    }
  }
  ASSERT_TRUE(m.MarkComputed(s, m.NumTokens(s)).ok());
}

// Runs `tokens` as a whole sequence `id` and releases it (its full blocks stay cached).
void RunAndRelease(KvCacheManager& m, SeqId id, const std::vector<int32_t>& tokens, float tag,
                   int layers) {
  ASSERT_TRUE(m.AddSequence(id).ok());
  ASSERT_TRUE(m.Append(id, tokens).ok);
  WriteAll(m, id, tag, layers);
  m.Release(id);
}

TEST(KvTierHookTest, EvictedBlocksComeBackFromTheTierWithTheirBytes) {
  auto m = Make({FullGroup(2, 2, 4)}, 6);
  MapTier tier;
  m->SetTierHook(&tier);
  const auto a = Range(100, 16);  // 4 full blocks.
  RunAndRelease(*m, 1, a, 1.0f, 2);
  EXPECT_EQ(tier.completions, 4);
  // A different prompt needs 5 blocks: 2 free, 3 cached ones are evicted (LRU: leaves first).
  RunAndRelease(*m, 2, Range(500, 20), 2.0f, 2);
  EXPECT_EQ(tier.evictions, 3);

  // Prompt a again: the pool still has block 0; blocks 1..3 come from the tier.
  ASSERT_TRUE(m->AddSequence(3).ok());
  const PrefixLookup look = m->LookupPrefix(a, "", 15);
  EXPECT_EQ(look.cached_tokens, 12);  // One token must run: 3 of 4 blocks adoptable.
  EXPECT_EQ(look.tier_tokens, 8);
  const StepPlan plan = m->PlanStep(std::vector<AppendRequest>{{3, a}});
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.new_blocks[0], 3);  // Two tier fills and the last block.
  const AppendResult r = m->Append(3, a);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.prefix.cached_tokens, 12);
  EXPECT_EQ(r.tier_fills, 2);
  EXPECT_EQ(tier.fills, 2);
  EXPECT_TRUE(tier.pins.empty());
  EXPECT_EQ(m->NumComputed(3), 12);
  std::vector<float> k(8), v(8);
  for (int64_t p = 0; p < 12; ++p) {
    for (int l = 0; l < 2; ++l) {
      m->ReadKv(3, l, p, k.data(), v.data());
      EXPECT_FLOAT_EQ(k[3], 1.0f + float(l) * 0.5f + float(p) * 0.01f + 3e-4f) << p;
      EXPECT_FLOAT_EQ(v[3], -k[3]);
    }
  }
  // Filled blocks are indexed again: a fourth sequence finds them in the pool.
  tier.enabled = false;
  EXPECT_EQ(m->LookupPrefix(a, "", 15).cached_tokens, 12);
  EXPECT_EQ(m->Stats().prefix_tier_hit_tokens, 8);
}

TEST(KvTierHookTest, TierHitsNeedTheirOwnBlocksAndFailWholeWhenShort) {
  auto m = Make({FullGroup(2, 2, 4)}, 5);
  MapTier tier;
  m->SetTierHook(&tier);
  const auto a = Range(100, 16);
  RunAndRelease(*m, 1, a, 1.0f, 2);
  EXPECT_EQ(m->DemoteAllCached(), 4);
  EXPECT_EQ(tier.evictions, 4);
  EXPECT_EQ(m->Stats().groups[0].free_blocks, 5);
  // Hold 3 of 5 blocks: prompt a needs 3 tier fills + 1 block, only 2 are available.
  ASSERT_TRUE(m->AddSequence(9).ok());
  ASSERT_TRUE(m->Append(9, Range(900, 12)).ok);
  ASSERT_TRUE(m->AddSequence(3).ok());
  EXPECT_FALSE(m->PlanStep(std::vector<AppendRequest>{{3, a}}).fits);
  EXPECT_FALSE(m->Append(3, a).ok);
  EXPECT_EQ(tier.fills, 0);
  EXPECT_TRUE(m->BlockTable(3, 0).empty());
}

TEST(KvTierHookTest, EveryGroupMustBeServedAndWindowedGroupsOnlyTheirWindow) {
  // Group 0: full attention over layer 0; group 1: a 4-token window over layer 1.
  auto m = Make({FullGroup(1, 2, 4), WindowGroup(1, 2, 4, 4, 0, KvDtype::kF32, 1)}, 8);
  MapTier tier;
  m->SetTierHook(&tier);
  const auto a = Range(100, 17);
  RunAndRelease(*m, 1, a, 1.0f, 2);
  m->DemoteAllCached();
  ASSERT_TRUE(m->AddSequence(2).ok());
  PrefixLookup look = m->LookupPrefix(a, "", 16);
  EXPECT_EQ(look.cached_tokens, 16);
  // The windowed group needs only the last block of the prefix; the full group all four.
  int needed = 0;
  for (int32_t blk : look.blocks[1]) needed += blk != -1;
  EXPECT_EQ(needed, 1);
  ASSERT_TRUE(m->Append(2, a).ok);
  std::vector<float> k(8), v(8);
  m->ReadKv(2, 1, 15, k.data(), v.data());
  EXPECT_FLOAT_EQ(k[0], 1.0f + 0.5f + 0.15f);
  m->ReadKv(2, 0, 3, k.data(), v.data());
  EXPECT_FLOAT_EQ(k[0], 1.0f + 0.03f);
  // A tier without the full group's block 1 cuts the prefix there.
  m->Release(2);
  m->DemoteAllCached();
  tier.blocks.erase(tier.blocks.find({0, look.block_hashes[1].Hex()}));
  ASSERT_TRUE(m->AddSequence(3).ok());
  EXPECT_EQ(m->LookupPrefix(a, "", 16).cached_tokens, 4);
}

TEST(KvTierHookTest, NoHookNoTier) {
  auto m = Make({FullGroup(2, 2, 4)}, 6);
  const auto a = Range(100, 16);
  RunAndRelease(*m, 1, a, 1.0f, 2);
  EXPECT_EQ(m->DemoteAllCached(), 4);  // Dropped: nothing below the pool.
  ASSERT_TRUE(m->AddSequence(2).ok());
  EXPECT_EQ(m->LookupPrefix(a, "", 15).cached_tokens, 0);
}

}  // namespace
}  // namespace kvengine
