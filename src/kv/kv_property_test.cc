// Randomized property test of KvCacheManager against a simple reference model.
//
// The reference keeps, per sequence, its salt and tokens. KV written at position p is a pure
// function of (salt, tokens[0..p], layer, element) — as a real model's would be — so any
// sequence can check every position it can see, whether its block was written by itself, by a
// fork parent or by another sequence through a prefix-cache hit. After every operation the test
// checks: refcounts equal the references held by block tables, no block is both free and held,
// the pool's counts add up, windowed groups hold no more than the planner's bound, and (often)
// every visible position reads back exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>
#include <random>

#include "kv/kv_cache_manager.h"
#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;
using testing::WindowGroup;

constexpr int kDim = 3;    // Head dim.
constexpr int kHeads = 2;  // KV heads.

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

struct RefSeq {
  std::string salt;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> prefix_hash;  // [pos]: Mix over salt and tokens[0..pos].
};

float Expected(const RefSeq& s, int64_t pos, int layer, int e, bool v) {
  const uint64_t h = Mix(Mix(s.prefix_hash[size_t(pos)], uint64_t(layer) * 7 + uint64_t(e)), v);
  return static_cast<float>(h % 20001) / 10000.0f - 1.0f;
}

// A bounded tier below the pool: keeps the last `capacity` evicted blocks (LRU, pins respected),
// so lookups extend into it and adoptions copy blocks back.
class BoundedTier final : public KvTierHook {
 public:
  explicit BoundedTier(size_t capacity) : capacity_(capacity) {}
  void OnEvict(int g, const BlockHash& h, std::span<const uint8_t> bytes) override {
    const Key k{g, h.Hex()};
    lru_.remove(k);
    blocks_[k].assign(bytes.begin(), bytes.end());
    lru_.push_back(k);
    for (auto it = lru_.begin(); blocks_.size() > capacity_ && it != lru_.end();) {
      if (pins_.count(*it)) {
        ++it;
        continue;
      }
      blocks_.erase(*it);
      it = lru_.erase(it);
    }
  }
  void OnComplete(int, const BlockHash&, std::span<const uint8_t>) override {}
  bool Has(int g, const BlockHash& h) const override { return blocks_.count({g, h.Hex()}) != 0; }
  bool Fill(int g, const BlockHash& h, std::span<uint8_t> dst) override {
    auto it = blocks_.find({g, h.Hex()});
    if (it == blocks_.end() || it->second.size() != dst.size()) return false;
    std::copy(it->second.begin(), it->second.end(), dst.begin());
    ++fills;
    return true;
  }
  void Pin(int g, const BlockHash& h) override { ++pins_[{g, h.Hex()}]; }
  void Unpin(int g, const BlockHash& h) override {
    if (--pins_[{g, h.Hex()}] == 0) pins_.erase({g, h.Hex()});
  }
  int64_t fills = 0;

 private:
  using Key = std::pair<int, std::string>;
  size_t capacity_;
  std::map<Key, std::vector<uint8_t>> blocks_;
  std::list<Key> lru_;
  std::map<Key, int> pins_;
};

class PropertyHarness {
 public:
  PropertyHarness(std::vector<KvGroupSpec> groups, int block, int32_t blocks, uint32_t seed,
                  KvTierHook* tier = nullptr)
      : rng_(seed), block_(block) {
    KvCacheConfig c;
    c.groups = std::move(groups);
    c.block_size = block;
    c.num_blocks = blocks;
    c.model_fingerprint = "prop";
    for (const auto& g : c.groups) {
      for (int l : g.layers) layers_.push_back(l);
    }
    m_ = std::move(KvCacheManager::Create(c)).value();
    m_->SetTierHook(tier);
    // A few base prompts so new sequences share prefixes and hit the cache.
    for (int i = 0; i < 4; ++i) {
      std::vector<int32_t> base(size_t(Uniform(0, 6 * block)));
      for (auto& t : base) t = Uniform(0, 9);
      bases_.push_back(base);
    }
  }

  void Run(int ops) {
    for (int i = 0; i < ops; ++i) {
      const int op = Uniform(0, 99);
      if (op < 25 || seqs_.empty()) {
        NewSequence();
      } else if (op < 60) {
        Decode(Pick(), Uniform(1, block_));
      } else if (op < 68) {
        Fork(Pick());
      } else if (op < 76) {
        Truncate(Pick());
      } else if (op < 92) {
        Release(Pick());
      } else {
        Lookup();
      }
      CheckInvariants(i % 50 == 0);
    }
    for (auto& [id, s] : seqs_) m_->Release(id);
    seqs_.clear();
    CheckInvariants(false);
    for (int g = 0; g < m_->num_groups(); ++g) {
      EXPECT_EQ(m_->group(g).pool().num_used(), 0) << "leaked blocks in group " << g;
    }
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  SeqId Pick() {
    auto it = seqs_.begin();
    std::advance(it, Uniform(0, int(seqs_.size()) - 1));
    return it->first;
  }

  void Extend(RefSeq& s, std::span<const int32_t> t) {
    for (int32_t tok : t) {
      const uint64_t prev = s.prefix_hash.empty() ? Mix(std::hash<std::string>()(s.salt), 1)
                                                  : s.prefix_hash.back();
      s.tokens.push_back(tok);
      s.prefix_hash.push_back(Mix(prev, uint64_t(uint32_t(tok))));
    }
  }

  // Appends, writes the new positions the way a model would, and marks them computed.
  bool AppendAndCompute(SeqId id, std::span<const int32_t> t) {
    const AppendResult r = m_->Append(id, t);
    if (!r.ok) return false;
    RefSeq& s = seqs_[id];
    Extend(s, t);
    std::vector<float> k(kHeads * kDim), v(kHeads * kDim);
    for (int64_t p = m_->NumComputed(id); p < m_->NumTokens(id); ++p) {
      for (int l : layers_) {
        for (int e = 0; e < kHeads * kDim; ++e) {
          k[size_t(e)] = Expected(s, p, l, e, false);
          v[size_t(e)] = Expected(s, p, l, e, true);
        }
        m_->WriteKv(id, l, p, k.data(), v.data());
      }
    }
    EXPECT_TRUE(m_->MarkComputed(id, m_->NumTokens(id)).ok());
    return true;
  }

  void NewSequence() {
    const SeqId id = next_id_++;
    const std::string salt = Uniform(0, 5) == 0 ? "tenant-b" : "";
    ASSERT_TRUE(m_->AddSequence(id, salt).ok());
    seqs_[id].salt = salt;
    std::vector<int32_t> prompt = bases_[size_t(Uniform(0, 3))];
    prompt.resize(std::min(prompt.size(), size_t(Uniform(0, int(prompt.size())))));
    for (int i = Uniform(1, 2 * block_); i > 0; --i) prompt.push_back(Uniform(0, 9));
    if (!AppendAndCompute(id, prompt)) {
      m_->Release(id);
      seqs_.erase(id);
    }
  }

  void Decode(SeqId id, int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = Uniform(0, 9);
    AppendAndCompute(id, t);  // Out of blocks leaves the sequence as it was.
  }

  void Fork(SeqId id) {
    const SeqId child = next_id_++;
    ASSERT_TRUE(m_->Fork(id, child).ok());
    seqs_[child] = seqs_[id];
  }

  void Truncate(SeqId id) {
    RefSeq& s = seqs_[id];
    const int64_t n = Uniform(0, int(s.tokens.size()));
    if (!m_->Truncate(id, n).ok()) return;  // Windowed groups refuse to go back too far.
    s.tokens.resize(size_t(n));
    s.prefix_hash.resize(size_t(n));
  }

  void Release(SeqId id) {
    m_->Release(id);
    seqs_.erase(id);
  }

  void Lookup() {
    const std::vector<int32_t>& base = bases_[size_t(Uniform(0, 3))];
    const PrefixLookup l = m_->LookupPrefix(base, "", int64_t(base.size()));
    EXPECT_EQ(l.cached_tokens + l.miss_never_cached + l.miss_evicted + l.miss_partial,
              int64_t(base.size()));
    EXPECT_EQ(l.cached_tokens % block_, 0);
  }

  void CheckInvariants(bool check_values) {
    for (int g = 0; g < m_->num_groups(); ++g) {
      const KvGroup& grp = m_->group(g);
      const BlockPool& pool = grp.pool();
      std::map<int32_t, int32_t> refs;
      for (const auto& [id, s] : seqs_) {
        const auto table = m_->BlockTable(id, g);
        ASSERT_EQ(int64_t(table.size()), (int64_t(s.tokens.size()) + block_ - 1) / block_);
        int64_t held = 0;
        for (int32_t b : table) {
          if (b < 0) continue;
          ++refs[b];
          ++held;
        }
        if (grp.spec().windowed()) {
          // Checked after MarkComputed: out-of-window blocks are back in the pool.
          EXPECT_LE(held, BlocksPerSequence(grp.spec(), block_, int64_t(s.tokens.size())));
        }
      }
      int32_t used = 0, shared = 0;
      for (int32_t b = 0; b < pool.num_blocks(); ++b) {
        const int32_t expected = refs.count(b) ? refs[b] : 0;
        ASSERT_EQ(pool.refcount(b), expected) << "group " << g << " block " << b;
        ASSERT_EQ(pool.state(b) == BlockState::kUsed, expected > 0) << "block " << b;
        ASSERT_TRUE(pool.state(b) != BlockState::kCached || grp.index().IsIndexed(b));
        used += expected > 0;
        shared += expected > 1;
      }
      ASSERT_EQ(pool.num_used(), used);
      ASSERT_EQ(pool.num_shared(), shared);
    }
    if (!check_values) return;
    std::vector<float> k(kHeads * kDim), v(kHeads * kDim);
    for (const auto& [id, s] : seqs_) {
      for (int g = 0; g < m_->num_groups(); ++g) {
        const auto table = m_->BlockTable(id, g);
        for (int l : m_->group(g).spec().layers) {
          for (int64_t p = 0; p < int64_t(s.tokens.size()); ++p) {
            if (table[size_t(p / block_)] < 0) continue;
            m_->ReadKv(id, l, p, k.data(), v.data());
            for (int e = 0; e < kHeads * kDim; ++e) {
              ASSERT_EQ(k[size_t(e)], Expected(s, p, l, e, false))
                  << "seq " << id << " layer " << l << " pos " << p;
              ASSERT_EQ(v[size_t(e)], Expected(s, p, l, e, true));
            }
          }
        }
      }
    }
  }

  std::mt19937 rng_;
  int block_;
  std::unique_ptr<KvCacheManager> m_;
  std::vector<int> layers_;
  std::vector<std::vector<int32_t>> bases_;
  std::map<SeqId, RefSeq> seqs_;
  SeqId next_id_ = 1;
};

TEST(KvPropertyTest, FullAttention100kOps) {
  PropertyHarness h({FullGroup(2, kHeads, kDim)}, 4, 96, 1234);
  h.Run(100000);
}

TEST(KvPropertyTest, HybridWindowAndSinks50kOps) {
  KvGroupSpec win = WindowGroup(1, kHeads, kDim, 9, 3);
  KvGroupSpec full = FullGroup(1, kHeads, kDim, KvDtype::kF32, 1);
  PropertyHarness h({win, full}, 4, 80, 99);
  h.Run(50000);
}

TEST(KvPropertyTest, FullAttentionOverATier50kOps) {
  BoundedTier tier(64);
  PropertyHarness h({FullGroup(2, kHeads, kDim)}, 4, 48, 4321, &tier);
  h.Run(50000);
  EXPECT_GT(tier.fills, 100);  // The tier really served blocks (and values were checked).
}

TEST(KvPropertyTest, HybridWindowOverATier30kOps) {
  BoundedTier tier(48);
  KvGroupSpec win = WindowGroup(1, kHeads, kDim, 9, 3);
  KvGroupSpec full = FullGroup(1, kHeads, kDim, KvDtype::kF32, 1);
  PropertyHarness h({win, full}, 4, 40, 77, &tier);
  h.Run(30000);
  EXPECT_GT(tier.fills, 50);
}

TEST(KvPropertyTest, BlockSizeOne30kOps) {
  PropertyHarness h({FullGroup(1, kHeads, kDim)}, 1, 200, 7);
  h.Run(30000);
}

}  // namespace
}  // namespace kvengine
