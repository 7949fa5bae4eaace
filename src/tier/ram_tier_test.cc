// RamTier: byte-exact round trips, LRU order, capacity, pins, replacement, and a randomized run
// against a plain reference model (a list in recency order).
#include "tier/ram_tier.h"

#include <algorithm>
#include <list>
#include <map>
#include <random>

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TierKey Key(int i, int32_t group = 0) {
  return TierKey{BlockHash{Sha256Of("block " + std::to_string(i))}, group};
}

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> Get(RamTier& t, const TierKey& k) {
  std::optional<uint64_t> size = t.SizeOf(k);
  if (!size) return {};
  std::vector<uint8_t> out(*size);
  EXPECT_TRUE(t.CopyOut(k, out));
  return out;
}

TEST(RamTierTest, RoundTripKeepsEveryByte) {
  RamTier t({.capacity_bytes = 1 << 20});
  std::vector<uint8_t> a = Bytes(4096, 1), b = Bytes(1000, 2);
  ASSERT_TRUE(t.Insert(Key(1), a));
  ASSERT_TRUE(t.Insert(Key(1, /*group=*/1), b));  // Same hash, other group: another entry.
  EXPECT_EQ(Get(t, Key(1)), a);
  EXPECT_EQ(Get(t, Key(1, 1)), b);
  std::vector<uint8_t> wrong(4095);
  EXPECT_FALSE(t.CopyOut(Key(1), wrong));  // Size differs: a miss, nothing copied.
  EXPECT_FALSE(t.CopyOut(Key(2), wrong));
  RamTierStats s = t.Stats();
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.bytes, 5096u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.bytes_read, 5096u);
  EXPECT_EQ(s.bytes_written, 5096u);
}

TEST(RamTierTest, EvictsLeastRecentlyUsedAndHandsItOver) {
  RamTier t({.capacity_bytes = 3 * 100});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.Insert(Key(i), Bytes(100, uint32_t(i))));
  ASSERT_EQ(Get(t, Key(0)), Bytes(100, 0));  // 0 becomes the most recent.
  EXPECT_EQ(t.KeysLruFirst(), (std::vector<TierKey>{Key(1), Key(2), Key(0)}));
  std::vector<TierKey> evicted;
  std::vector<std::vector<uint8_t>> evicted_bytes;
  auto on_evict = [&](const TierKey& k, std::span<const uint8_t> bytes) {
    evicted.push_back(k);
    evicted_bytes.emplace_back(bytes.begin(), bytes.end());
  };
  ASSERT_TRUE(t.Insert(Key(3), Bytes(100, 3), on_evict));
  ASSERT_EQ(evicted, (std::vector<TierKey>{Key(1)}));
  EXPECT_EQ(evicted_bytes[0], Bytes(100, 1));  // The bytes, before they are recycled.
  EXPECT_FALSE(t.Contains(Key(1)));
  // A block twice the size evicts the two least recent.
  ASSERT_TRUE(t.Insert(Key(4), Bytes(200, 4), on_evict));
  EXPECT_EQ(evicted, (std::vector<TierKey>{Key(1), Key(2), Key(0)}));
  EXPECT_EQ(t.KeysLruFirst(), (std::vector<TierKey>{Key(3), Key(4)}));
  EXPECT_EQ(t.Stats().evictions, 3u);
  EXPECT_LE(t.Stats().bytes + t.Stats().free_buffer_bytes, 300u);
}

TEST(RamTierTest, CapacityLimits) {
  RamTier t({.capacity_bytes = 256});
  EXPECT_FALSE(t.Insert(Key(0), Bytes(257, 0)));
  EXPECT_EQ(t.Stats().rejected, 1u);
  ASSERT_TRUE(t.Insert(Key(1), Bytes(256, 1)));  // Exactly the capacity.
  ASSERT_TRUE(t.Insert(Key(2), {}));             // Empty entries take no room.
  EXPECT_EQ(t.Stats().blocks, 2u);
  EXPECT_EQ(t.Stats().bytes, 256u);
  std::vector<uint8_t> none;
  EXPECT_TRUE(t.CopyOut(Key(2), none));
}

TEST(RamTierTest, PinnedEntriesAreNeverEvicted) {
  RamTier t({.capacity_bytes = 300});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.Insert(Key(i), Bytes(100, uint32_t(i))));
  t.Pin(Key(0));
  t.Pin(Key(0));  // Pins count.
  t.Pin(Key(1));
  EXPECT_EQ(t.KeysLruFirst(), (std::vector<TierKey>{Key(2)}));
  ASSERT_TRUE(t.Insert(Key(3), Bytes(100, 3)));  // Only 2 was evictable.
  EXPECT_TRUE(t.Contains(Key(0)) && t.Contains(Key(1)) && !t.Contains(Key(2)));
  // Room for 100 more only by evicting 3; 200 needs a pinned entry gone: refused, no change.
  EXPECT_FALSE(t.Insert(Key(4), Bytes(200, 4)));
  EXPECT_TRUE(t.Contains(Key(3)));
  EXPECT_FALSE(t.Erase(Key(0)));  // Pinned: refused.
  t.Unpin(Key(0));
  EXPECT_EQ(t.Stats().pinned_blocks, 2u);  // 0 is still pinned once.
  t.Unpin(Key(0));
  t.Unpin(Key(1));
  // Unpinned entries re-enter as the most recent, in unpin order.
  EXPECT_EQ(t.KeysLruFirst(), (std::vector<TierKey>{Key(3), Key(0), Key(1)}));
  EXPECT_EQ(Get(t, Key(0)), Bytes(100, 0));
  t.Pin(Key(1));
  t.Clear();  // Keeps the pinned entry.
  EXPECT_EQ(t.Stats().blocks, 1u);
  EXPECT_TRUE(t.Contains(Key(1)));
  // The cleared entries' buffers wait for reuse, still inside the capacity.
  EXPECT_EQ(t.Stats().free_buffer_bytes + t.Stats().bytes, 300u);
  std::vector<uint8_t> out(100);
  EXPECT_TRUE(t.Peek(Key(1), out));
  EXPECT_EQ(out, Bytes(100, 1));
  EXPECT_FALSE(t.Peek(Key(0), out));
}

TEST(RamTierTest, Replacement) {
  RamTier t({.capacity_bytes = 300});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.Insert(Key(i), Bytes(100, uint32_t(i))));
  // Same size: overwritten in place, becomes the most recent, evicts nothing.
  ASSERT_TRUE(t.Insert(Key(0), Bytes(100, 10)));
  EXPECT_EQ(Get(t, Key(0)), Bytes(100, 10));
  EXPECT_EQ(t.KeysLruFirst(), (std::vector<TierKey>{Key(1), Key(2), Key(0)}));
  EXPECT_EQ(t.Stats().evictions, 0u);
  // Larger: its own old bytes are released first, then the LRU entry makes the rest of the room.
  t.Pin(Key(0));
  ASSERT_TRUE(t.Insert(Key(0), Bytes(150, 11)));
  EXPECT_EQ(Get(t, Key(0)), Bytes(150, 11));
  EXPECT_FALSE(t.Contains(Key(1)));
  EXPECT_EQ(t.Stats().pinned_blocks, 1u);  // The pin carried over.
  t.Unpin(Key(0));
  EXPECT_EQ(t.Stats().bytes, 250u);
  EXPECT_FALSE(t.Insert(Key(0), Bytes(301, 12)));
  EXPECT_EQ(Get(t, Key(0)), Bytes(150, 11));  // A refused replacement keeps the old entry.
}

TEST(RamTierTest, SteadyStateRecyclesBuffers) {
  RamTier t({.capacity_bytes = 4 * 64});
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.Insert(Key(i), Bytes(64, uint32_t(i))));
  EXPECT_EQ(t.Stats().blocks, 4u);
  EXPECT_EQ(t.Stats().evictions, 96u);
  ASSERT_TRUE(t.Erase(Key(99)));
  EXPECT_EQ(t.Stats().free_buffer_bytes, 64u);  // Kept for the next 64-byte insert.
  ASSERT_TRUE(t.Insert(Key(100), Bytes(64, 100)));
  EXPECT_EQ(t.Stats().free_buffer_bytes, 0u);
  EXPECT_EQ(t.Stats().evictions, 96u);
  // A different size first drops the free buffers, then evicts.
  ASSERT_TRUE(t.Erase(Key(100)));
  ASSERT_TRUE(t.Insert(Key(101), Bytes(128, 101)));
  EXPECT_EQ(t.Stats().bytes, 64u * 2 + 128u);
  EXPECT_EQ(t.Stats().evictions, 97u);
}

// Random inserts (3 sizes), reads, pins and erases against a reference that keeps the unpinned
// keys in recency order and evicts from its front until the new entry fits.
TEST(RamTierTest, MatchesReferenceModel) {
  constexpr uint64_t kCapacity = 1000;
  RamTier t({.capacity_bytes = kCapacity});
  std::list<int> lru;                                  // Unpinned keys, least recent first.
  std::map<int, std::pair<uint32_t, size_t>> content;  // key -> (seed, size)
  std::map<int, int> pins;
  std::mt19937 rng(7);
  auto live = [&] {
    uint64_t b = 0;
    for (auto& [k, v] : content) b += v.second;
    return b;
  };
  auto pinned = [&] {
    uint64_t b = 0;
    for (auto& [k, p] : pins) b += p > 0 ? content[k].second : 0;
    return b;
  };
  for (int step = 0; step < 5000; ++step) {
    const int k = int(rng() % 20);
    const int op = int(rng() % 10);
    if (op < 5) {
      const size_t size = 100 * (1 + rng() % 3);
      const uint32_t seed = uint32_t(step);
      const bool had = content.count(k) != 0;
      const uint64_t other_pinned = pinned() - (had && pins[k] > 0 ? content[k].second : 0);
      const bool fits = size <= kCapacity && other_pinned + size <= kCapacity;
      std::vector<int> evicted;
      bool ok = t.Insert(Key(k), Bytes(size, seed), [&](const TierKey& key, auto) {
        for (int i = 0; i < 20; ++i)
          if (key == Key(i)) evicted.push_back(i);
      });
      ASSERT_EQ(ok, fits) << step;
      if (!ok) continue;
      std::vector<int> want_evicted;
      if (had) {
        if (pins[k] == 0) lru.remove(k);
        content.erase(k);
      }
      while (live() + size > kCapacity) {
        want_evicted.push_back(lru.front());
        content.erase(lru.front());
        lru.pop_front();
      }
      content[k] = {seed, size};
      if (pins[k] == 0) lru.push_back(k);
      ASSERT_EQ(evicted, want_evicted) << step;
    } else if (op < 7) {
      if (!content.count(k)) {
        std::vector<uint8_t> dst(100);
        EXPECT_FALSE(t.CopyOut(Key(k), dst));
        continue;
      }
      ASSERT_EQ(Get(t, Key(k)), Bytes(content[k].second, content[k].first)) << step;
      if (pins[k] == 0) {
        lru.remove(k);
        lru.push_back(k);
      }
    } else if (op < 8 && content.count(k)) {
      t.Pin(Key(k));
      if (pins[k]++ == 0) lru.remove(k);
    } else if (op < 9 && content.count(k) && pins[k] > 0) {
      t.Unpin(Key(k));
      if (--pins[k] == 0) lru.push_back(k);
    } else if (op == 9) {
      const bool removable = content.count(k) && pins[k] == 0;
      ASSERT_EQ(t.Erase(Key(k)), removable);
      if (removable) {
        lru.remove(k);
        content.erase(k);
      }
    }
    std::vector<TierKey> want;
    for (int i : lru) want.push_back(Key(i));
    ASSERT_EQ(t.KeysLruFirst(), want) << step;
    RamTierStats s = t.Stats();
    ASSERT_EQ(s.bytes, live());
    ASSERT_LE(s.bytes + s.free_buffer_bytes, kCapacity);
  }
}

}  // namespace
}  // namespace kvengine
