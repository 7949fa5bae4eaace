// TierManager over in-memory fake stores: demotion into RAM and the cascade to disk, write
// policies, the bounded write queue, prefetch order and verification, the cost model, and two
// record formats (raw and a cold dtype) sharing one store.
#include "tier/tier_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "base/sha256.h"
#include "quant/half.h"
#include "tier/block_record.h"

namespace kvengine {
namespace {

constexpr uint64_t kBlockBytes = 64;

// A BlockStore in a map; Put can be held back by a gate to fill the write queue.
class FakeStore final : public BlockStore {
 public:
  explicit FakeStore(const char* name) : name_(name) {}
  std::string_view name() const override { return name_; }
  Status Put(const TierKey& key, std::span<const uint8_t> record) override {
    std::unique_lock<std::mutex> lock(mu_);
    gate_cv_.wait(lock, [&] { return open_; });
    map_[key.Name()].assign(record.begin(), record.end());
    ++puts;
    return Status::Ok();
  }
  void GetMany(std::span<const TierKey> keys,
               std::vector<std::optional<std::vector<uint8_t>>>* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    out->assign(keys.size(), std::nullopt);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = map_.find(keys[i].Name());
      if (it != map_.end()) (*out)[i] = it->second;
    }
    ++gets;
  }
  void Erase(const TierKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_.erase(key.Name());
  }
  BlockStoreStats Stats() const override { return {}; }

  void SetGate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = open;
    }
    gate_cv_.notify_all();
  }
  std::optional<std::vector<uint8_t>> Get(const TierKey& k) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k.Name());
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void Set(const TierKey& k, std::vector<uint8_t> v) {
    std::lock_guard<std::mutex> lock(mu_);
    map_[k.Name()] = std::move(v);
  }

  std::atomic<int> puts{0}, gets{0};

 private:
  const char* name_;
  std::mutex mu_;
  std::condition_variable gate_cv_;
  bool open_ = true;
  std::map<std::string, std::vector<uint8_t>> map_;
};

TierLayout Layout() {
  TierLayout l;
  l.namespace_digest = Sha256Of("tier-manager-test");
  l.bytes_per_block = {kBlockBytes};
  l.block_size = 4;
  l.bytes_per_token = kBlockBytes / 4;
  return l;
}

BlockHash Hash(int i) {
  BlockHash h;
  h.bytes = Sha256Of("block " + std::to_string(i));
  return h;
}

std::vector<uint8_t> Bytes(int i) {
  std::vector<uint8_t> v(kBlockBytes);
  for (size_t k = 0; k < v.size(); ++k) v[k] = uint8_t(i * 31 + int(k));
  return v;
}

std::vector<uint8_t> Record(int i) {
  RecordMeta m;
  m.namespace_digest = Layout().namespace_digest;
  m.group = 0;
  m.hash = Hash(i);
  m.payload_bytes = kBlockBytes;
  return EncodeRecord(m, Bytes(i));
}

struct Fixture {
  Fixture(uint64_t ram_bytes, bool disk, bool redis, RedisWritePolicy policy = RedisWritePolicy::kAll,
          uint64_t queue_bytes = 1 << 20) {
    auto d = std::make_unique<FakeStore>("disk");
    auto r = std::make_unique<FakeStore>("redis");
    disk_store = disk ? d.get() : nullptr;
    redis_store = redis ? r.get() : nullptr;
    TierManagerOptions o;
    o.ram_bytes = ram_bytes;
    o.redis_write = policy;
    o.write_queue_bytes = queue_bytes;
    tm = std::make_unique<TierManager>(o, Layout(), disk ? std::move(d) : nullptr,
                                       redis ? std::move(r) : nullptr);
    tm->set_verify_checksums(true);  // FakeStore does not verify records itself.
    tm->set_on_ready([this] {
      std::lock_guard<std::mutex> lock(mu);
      ++ready;
      cv.notify_all();
    });
  }
  std::vector<uint64_t> WaitPoll(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return size_t(ready) >= n; });
    lock.unlock();
    return tm->Poll();
  }
  FakeStore* disk_store;
  FakeStore* redis_store;
  std::unique_ptr<TierManager> tm;
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
};

TEST(TierManagerTest, DemotedBlocksFillBackByteForByte) {
  Fixture f(4 * kBlockBytes, false, false);
  f.tm->OnEvict(0, Hash(1), Bytes(1));
  EXPECT_TRUE(f.tm->Has(0, Hash(1)));
  EXPECT_FALSE(f.tm->Has(0, Hash(2)));
  EXPECT_FALSE(f.tm->Has(1, Hash(1)));  // Another group's block.
  std::vector<uint8_t> out(kBlockBytes);
  f.tm->Pin(0, Hash(1));
  ASSERT_TRUE(f.tm->Fill(0, Hash(1), out));
  f.tm->Unpin(0, Hash(1));
  EXPECT_EQ(out, Bytes(1));
  const TierStats s = f.tm->Stats();
  EXPECT_EQ(s.demotions, 1u);
  EXPECT_EQ(s.prefix_hit_blocks[size_t(TierKind::kRam)], 1u);
  EXPECT_EQ(s.tiers[size_t(TierKind::kRam)].bytes_read, kBlockBytes);
}

TEST(TierManagerTest, RamEvictionsCascadeToDiskAsVerifiedRecords) {
  Fixture f(2 * kBlockBytes, true, false);
  for (int i = 0; i < 4; ++i) f.tm->OnEvict(0, Hash(i), Bytes(i));
  f.tm->Flush();
  // RAM keeps the two most recent; the two oldest went to disk.
  EXPECT_TRUE(f.tm->Has(0, Hash(3)));
  EXPECT_FALSE(f.tm->Has(0, Hash(0)));
  for (int i : {0, 1}) {
    auto rec = f.disk_store->Get(TierKey{Hash(i), 0});
    ASSERT_TRUE(rec.has_value()) << i;
    RecordMeta want;
    want.namespace_digest = Layout().namespace_digest;
    want.hash = Hash(i);
    want.payload_bytes = kBlockBytes;
    std::span<const uint8_t> payload;
    ASSERT_EQ(CheckRecord(*rec, want, &payload), RecordCheck::kOk);
    EXPECT_EQ(std::vector<uint8_t>(payload.begin(), payload.end()), Bytes(i));
  }
  EXPECT_FALSE(f.disk_store->Get(TierKey{Hash(3), 0}).has_value());
  // Spilling writes the rest (so a restart finds everything).
  f.tm->SpillRamToDisk(/*clear=*/true);
  EXPECT_TRUE(f.disk_store->Get(TierKey{Hash(3), 0}).has_value());
  EXPECT_FALSE(f.tm->Has(0, Hash(3)));
}

TEST(TierManagerTest, RedisWritePolicies) {
  {
    Fixture f(0, false, true, RedisWritePolicy::kAll);
    f.tm->OnComplete(0, Hash(1), Bytes(1));
    f.tm->OnEvict(0, Hash(2), Bytes(2));
    f.tm->Flush();
    EXPECT_TRUE(f.redis_store->Get(TierKey{Hash(1), 0}).has_value());
    EXPECT_FALSE(f.redis_store->Get(TierKey{Hash(2), 0}).has_value());
  }
  {
    Fixture f(0, false, true, RedisWritePolicy::kEvicted);
    f.tm->OnComplete(0, Hash(1), Bytes(1));
    f.tm->OnEvict(0, Hash(2), Bytes(2));
    f.tm->Flush();
    EXPECT_FALSE(f.redis_store->Get(TierKey{Hash(1), 0}).has_value());
    EXPECT_TRUE(f.redis_store->Get(TierKey{Hash(2), 0}).has_value());
  }
}

TEST(TierManagerTest, AFullWriteQueueDropsInsteadOfBlocking) {
  Fixture f(0, true, false, RedisWritePolicy::kAll, /*queue_bytes=*/3 * kBlockBytes);
  f.disk_store->SetGate(false);  // The I/O thread blocks inside the first Put.
  for (int i = 0; i < 10; ++i) f.tm->OnEvict(0, Hash(i), Bytes(i));  // Returns at once.
  EXPECT_GE(f.tm->Stats().writes_dropped, 6u);
  f.disk_store->SetGate(true);
  f.tm->Flush();
  EXPECT_LE(f.disk_store->puts.load(), 4);
}

TEST(TierManagerTest, PrefetchLandsTheRunOfHitsFromDiskThenRedis) {
  Fixture f(0, true, true);
  f.disk_store->Set(TierKey{Hash(0), 0}, Record(0));
  f.disk_store->Set(TierKey{Hash(1), 0}, Record(1));
  f.redis_store->Set(TierKey{Hash(2), 0}, Record(2));
  // Block 3 is nowhere; block 4 is in Redis but comes after the gap.
  f.redis_store->Set(TierKey{Hash(4), 0}, Record(4));
  std::vector<std::vector<TierKey>> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back({TierKey{Hash(i), 0}});
  const uint64_t ticket = f.tm->Prefetch(blocks);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(f.WaitPoll(1), std::vector<uint64_t>{ticket});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(f.tm->Has(0, Hash(i))) << i;
  EXPECT_FALSE(f.tm->Has(0, Hash(4)));
  std::vector<uint8_t> out(kBlockBytes);
  f.tm->Pin(0, Hash(0));
  ASSERT_TRUE(f.tm->Fill(0, Hash(0), out));
  f.tm->Unpin(0, Hash(0));
  EXPECT_EQ(out, Bytes(0));
  f.tm->Pin(0, Hash(2));
  ASSERT_TRUE(f.tm->Fill(0, Hash(2), out));
  f.tm->Unpin(0, Hash(2));
  EXPECT_EQ(out, Bytes(2));
  const TierStats s = f.tm->Stats();
  EXPECT_EQ(s.prefix_hit_blocks[size_t(TierKind::kDisk)], 1u);
  EXPECT_EQ(s.prefix_hit_blocks[size_t(TierKind::kRedis)], 1u);
  EXPECT_EQ(s.prefetched_blocks, 3u);
  EXPECT_EQ(s.prefetches_issued, 1u);
}

TEST(TierManagerTest, RecordsThatDoNotVerifyAreMissesAndRemoved) {
  Fixture f(0, true, false);
  std::vector<uint8_t> bad = Record(0);
  bad[bad.size() - 1] ^= 1;
  f.disk_store->Set(TierKey{Hash(0), 0}, bad);
  f.disk_store->Set(TierKey{Hash(1), 0}, Record(2));  // Sound, but another block's record.
  for (int i : {0, 1}) {
    const uint64_t ticket = f.tm->Prefetch({{TierKey{Hash(i), 0}}});
    EXPECT_EQ(f.WaitPoll(size_t(i) + 1), std::vector<uint64_t>{ticket});
    EXPECT_FALSE(f.tm->Has(0, Hash(i)));
    EXPECT_FALSE(f.disk_store->Get(TierKey{Hash(i), 0}).has_value());
  }
  const TierStats s = f.tm->Stats();
  EXPECT_EQ(s.tiers[size_t(TierKind::kDisk)].corrupt, 2u);
  EXPECT_EQ(s.prefetches_useless, 2u);
}

TEST(TierManagerTest, CostModelRecomputesWhenPrefillIsFasterThanTheTier) {
  Fixture f(0, true, false);
  EXPECT_TRUE(f.tm->WorthFetching(TierKind::kDisk, 64));  // Nothing measured yet: try.
  // 16 bytes/token at the 5e8 B/s disk prior: 3.1e7 tokens/s. A prefill faster than that wins.
  f.tm->ObservePrefill(1'000'000'000, 1.0);
  EXPECT_FALSE(f.tm->WorthFetching(TierKind::kDisk, 64));
  EXPECT_EQ(f.tm->Prefetch({{TierKey{Hash(0), 0}}}), 0u);
  f.tm->ObservePrefill(1000, 1.0);
  for (int i = 0; i < 40; ++i) f.tm->ObservePrefill(1000, 1.0);
  EXPECT_TRUE(f.tm->WorthFetching(TierKind::kDisk, 64));
}

// One FakeStore seen by several managers, as servers see one Redis.
class SharedView final : public BlockStore {
 public:
  explicit SharedView(FakeStore* store) : store_(store) {}
  std::string_view name() const override { return "redis"; }
  Status Put(const TierKey& key, std::span<const uint8_t> record) override {
    return store_->Put(key, record);
  }
  void GetMany(std::span<const TierKey> keys,
               std::vector<std::optional<std::vector<uint8_t>>>* out) override {
    store_->GetMany(keys, out);
  }
  void Erase(const TierKey& key) override { store_->Erase(key); }
  BlockStoreStats Stats() const override { return {}; }

 private:
  FakeStore* store_;
};

// One full-attention group of f16 KV (1 layer, 2 heads of 32 dims, 4 tokens a block), stored as
// it is or re-encoded in `cold`.
TierLayout FormatLayout(std::optional<KvDtype> cold) {
  KvGroupSpec g;
  g.kind = KvGroupKind::kFull;
  g.layers = {0};
  g.num_kv_heads = 2;
  g.head_dim_k = g.head_dim_v = 32;
  g.dtypes = {LayerKvDtypes{KvDtype::kF16, KvDtype::kF16}};
  TierLayout l;
  l.namespace_digest = Sha256Of("shared-store");
  l.block_size = 4;
  l.bytes_per_block = {BlockLayout(g, l.block_size).bytes_per_block()};
  l.bytes_per_token = l.bytes_per_block[0] / 4;
  l.cold_dtype = cold;
  l.groups = {g};
  return l;
}

TEST(TierManagerTest, TwoRecordFormatsSharingOneStoreDoNotCollide) {
  // Two servers with different --kv-tier-dtype (raw f16, int8) and one Redis publish the same
  // block (same model, same prompt: the same hash). Each must read back its own record.
  FakeStore shared("redis");
  std::vector<std::unique_ptr<TierManager>> tms;
  for (std::optional<KvDtype> cold : {std::optional<KvDtype>(), std::optional(KvDtype::kInt8)}) {
    tms.push_back(std::make_unique<TierManager>(TierManagerOptions{}, FormatLayout(cold),
                                                nullptr, std::make_unique<SharedView>(&shared)));
    tms.back()->set_verify_checksums(true);
  }
  std::vector<uint8_t> block(FormatLayout(std::nullopt).bytes_per_block[0]);
  for (size_t i = 0; i + 1 < block.size(); i += 2) {
    const uint16_t h = F32ToF16(float(int(i % 37) - 18) / 8.0f);
    block[i] = uint8_t(h & 0xff);
    block[i + 1] = uint8_t(h >> 8);
  }
  for (auto& tm : tms) {
    tm->OnComplete(0, Hash(7), block);
    tm->Flush();
  }
  const TierKey raw_key{Hash(7), 0, kPayloadRawPool};
  const TierKey cold_key{Hash(7), 0, TranscodedPayloadFormat(KvDtype::kInt8)};
  EXPECT_NE(raw_key.Name(), cold_key.Name());
  ASSERT_TRUE(shared.Get(raw_key).has_value());
  ASSERT_TRUE(shared.Get(cold_key).has_value());
  EXPECT_LT(shared.Get(cold_key)->size(), shared.Get(raw_key)->size());
  for (size_t t = 0; t < tms.size(); ++t) {
    TierManager& tm = *tms[t];
    const uint64_t ticket = tm.Prefetch({{TierKey{Hash(7), 0}}});
    ASSERT_NE(ticket, 0u);
    std::vector<uint64_t> done;
    for (int i = 0; i < 10000 && done.empty(); ++i) {
      done = tm.Poll();
      if (done.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(done, std::vector<uint64_t>{ticket});
    ASSERT_TRUE(tm.Has(0, Hash(7))) << "manager " << t;
    std::vector<uint8_t> out(block.size());
    tm.Pin(0, Hash(7));
    ASSERT_TRUE(tm.Fill(0, Hash(7), out));
    tm.Unpin(0, Hash(7));
    if (t == 0) {
      EXPECT_EQ(out, block);  // Raw: byte for byte; int8: close (block_transcode_test).
    }
    const TierStats s = tm.Stats();
    EXPECT_EQ(s.tiers[size_t(TierKind::kRedis)].corrupt, 0u) << "manager " << t;
    EXPECT_EQ(s.prefetched_blocks, 1u) << "manager " << t;
  }
}

}  // namespace
}  // namespace kvengine
