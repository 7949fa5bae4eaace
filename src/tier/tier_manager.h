// TierManager: the KV offload tiers below the block pool — host RAM (engine thread), local disk
// and Redis (one I/O thread) — behind the KV manager's KvTierHook.
//
// Data paths (docs/tiers.md has the whole design):
//   demote   the pool evicts a cached block -> OnEvict copies it into the RAM tier (or, with no
//            RAM tier, queues it for disk); RAM evicts LRU entries -> queued for disk (cascade).
//   publish  Redis is written by policy: kAll queues every completed block (OnComplete), kEvicted
//            every block the pool evicts.
//   queue    writes go to the I/O thread through a queue bounded in bytes; a full queue drops
//            the block (counted) and never blocks the engine.
//   lookup   the KV manager asks Has/Fill on a pool miss: RAM only, synchronous (one memcpy).
//   prefetch the engine hands a waiting request's missing blocks to Prefetch(); the I/O thread
//            reads them from disk, then Redis (pipelined), verifies every record, and Poll()
//            lands them in RAM, where the request's admission finds them.
//   cost     whether to fetch from a tier or recompute is decided from the measured bandwidth
//            of each tier and the measured prefill speed (WorthFetching).
//
// Threads: every public method is for the engine loop thread (Stats() included). The
// I/O thread owns the disk and Redis stores. `on_ready` is called from the I/O thread after a
// prefetch completes and when the write queue drains, so the engine can wake up, Poll, and
// republish the tier counters.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kv/tier_hook.h"
#include "kv/group_spec.h"
#include "tier/block_record.h"
#include "tier/block_store.h"
#include "tier/block_transcode.h"
#include "tier/ram_tier.h"
#include "tier/tier_key.h"

namespace kvengine {

enum class TierKind : uint8_t { kRam = 0, kDisk = 1, kRedis = 2 };
inline constexpr int kNumTierKinds = 3;
const char* TierKindName(TierKind t);  // "ram", "disk", "redis"

enum class RedisWritePolicy { kAll, kEvicted };

struct TierManagerOptions {
  uint64_t ram_bytes = 0;  // RAM tier capacity (--swap-space); 0: no RAM tier.
  // RAM that lands disk/Redis prefetches when there is no RAM tier (not a tier: nothing is
  // demoted into it).
  uint64_t staging_bytes = uint64_t{256} << 20;
  uint64_t write_queue_bytes = uint64_t{256} << 20;  // Queued writes beyond this are dropped.
  RedisWritePolicy redis_write = RedisWritePolicy::kAll;
  const Clock* clock = nullptr;  // Null: SteadyClock. Times transfers (bandwidth).
};

// What the stored blocks mean: checked on every record read back.
struct TierLayout {
  Digest256 namespace_digest{};           // SHA-256 of the KV manager's cache namespace.
  std::vector<uint64_t> bytes_per_block;  // [group]
  int block_size = 16;
  uint64_t bytes_per_token = 0;  // KV bytes of one token, all groups (cost model).
  // Cold-tier compression: disk and Redis records hold blocks re-encoded in this dtype
  // (block_transcode.h); RAM keeps pool bytes. Needs `groups`.
  std::optional<KvDtype> cold_dtype;
  std::vector<KvGroupSpec> groups;  // [group] the pool's specs (for the transcoders).
};

struct TierCounters {
  bool present = false;
  uint64_t blocks = 0, bytes = 0, capacity_bytes = 0;
  uint64_t hits = 0, misses = 0;  // Blocks found / not found by lookups and prefetches.
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t errors = 0, corrupt = 0;  // Failed operations; records that did not verify.
  double bandwidth_bytes_per_s = 0;  // EWMA of measured reads; 0 until measured.
  double last_bandwidth_bytes_per_s = 0;  // The last read (disk/Redis: one prefetch; RAM: a block).
};

struct TierStats {
  TierCounters tiers[kNumTierKinds];  // [TierKind]
  uint64_t demotions = 0;             // Blocks the pool handed down.
  uint64_t writes_dropped = 0;        // Writes refused by a full queue.
  uint64_t prefetches_issued = 0, prefetches_useless = 0, prefetches_late = 0;
  uint64_t prefetched_blocks = 0;
  uint64_t prefix_hit_blocks[kNumTierKinds] = {};  // Pool fills by where the block came from.
  uint64_t redis_reconnects = 0;
  bool redis_breaker_open = false;
};

class TierManager final : public KvTierHook {
 public:
  // `disk`/`redis` may be null (tier absent). Starts the I/O thread when either is present.
  TierManager(TierManagerOptions options, TierLayout layout, std::unique_ptr<BlockStore> disk,
              std::unique_ptr<BlockStore> redis);
  ~TierManager() override;  // Finishes queued writes, then joins the I/O thread.
  TierManager(const TierManager&) = delete;
  TierManager& operator=(const TierManager&) = delete;

  void set_on_ready(std::function<void()> f) { on_ready_ = std::move(f); }
  // For stores that do not verify records themselves (test fakes). Before any Prefetch.
  void set_verify_checksums(bool v) { verify_checksums_ = v; }
  bool has_slow_tiers() const { return disk_ != nullptr || redis_ != nullptr; }

  // KvTierHook (engine thread).
  void OnEvict(int group, const BlockHash& hash, std::span<const uint8_t> bytes) override;
  void OnComplete(int group, const BlockHash& hash, std::span<const uint8_t> bytes) override;
  bool Has(int group, const BlockHash& hash) const override;
  bool Fill(int group, const BlockHash& hash, std::span<uint8_t> dst) override;
  void Pin(int group, const BlockHash& hash) override;
  void Unpin(int group, const BlockHash& hash) override;

  // Asks the I/O thread for the blocks of `blocks` (logical block order; the keys of every group
  // each block needs), stopping at the first block any tier misses. Returns a ticket that a
  // later Poll() returns once the blocks found are in RAM. 0: nothing to do (no slow tier is
  // worth it for `tokens` tokens, or `blocks` is empty).
  uint64_t Prefetch(std::vector<std::vector<TierKey>> blocks);
  // Lands completed prefetches in RAM; returns their tickets.
  std::vector<uint64_t> Poll();

  // Cost model: is reading `tokens` tokens of KV from tier t faster than recomputing them?
  bool WorthFetching(TierKind t, int64_t tokens) const;
  // The engine reports each step's prefill work (tokens computed, seconds).
  void ObservePrefill(int64_t tokens, double seconds);

  // Blocks until every queued write is done (benchmarks, shutdown).
  void Flush();
  // Queues every RAM entry for disk (so a restart finds it), then Flush(); with `clear`, the
  // RAM tier is emptied afterwards.
  void SpillRamToDisk(bool clear);
  void ClearRam();
  TierStats Stats() const;

 private:
  struct WriteJob {
    TierKey key;
    TierKind target;
    std::vector<uint8_t> payload;  // Raw pool-layout bytes.
  };
  struct FetchJob {
    uint64_t ticket;
    std::vector<std::vector<TierKey>> blocks;
    bool use_disk, use_redis;
  };
  struct Landed {
    TierKey key;
    TierKind source;
    std::vector<uint8_t> payload;
  };
  struct FetchDone {
    uint64_t ticket;
    std::vector<Landed> blocks;  // Logical block order.
    bool late = false;           // Slower than recomputing would have been.
  };

  void QueueWrite(const TierKey& key, TierKind target, std::span<const uint8_t> bytes);
  // Block buffers are reused between prefetches (engine thread returns, I/O thread takes).
  void RecycleBuffers(std::vector<Landed>* blocks);
  std::vector<uint8_t> TakeBuffer(size_t bytes);
  void RamInsert(const TierKey& key, std::span<const uint8_t> bytes, TierKind origin);
  void IoLoop();
  void RunWrite(WriteJob& job);
  void RunFetch(FetchJob& job);
  // Reads blocks [*next, end) of `job` from `store` while every key of a block verifies;
  // advances *next. Returns bytes read.
  uint64_t FetchFrom(BlockStore* store, TierKind kind, const FetchJob& job, size_t* next,
                     std::vector<Landed>* out);
  void Observe(TierKind t, uint64_t bytes, double seconds);
  double Bandwidth(TierKind t) const;
  double Seconds() const;

  // The record identity a write stores and a read expects for `key`.
  RecordMeta MetaOf(const TierKey& key) const;
  // The key of `key`'s record in the disk and Redis stores: the same block under this manager's
  // record format (RAM keys carry format 0; the stores' records may be re-encoded).
  TierKey StoreKey(TierKey key) const {
    key.format = payload_format_;
    return key;
  }

  const TierManagerOptions options_;
  const TierLayout layout_;
  std::vector<BlockTranscoder> transcoders_;  // [group]; empty without a cold dtype.
  uint32_t payload_format_ = kPayloadRawPool;  // Of the records written to and read from stores.
  // Whether fetched records' checksums are checked again here. The disk and Redis stores check
  // them on read; a test may hand in a store that does not.
  bool verify_checksums_ = false;
  const Clock* clock_;
  std::function<void()> on_ready_;

  // Engine thread.
  RamTier ram_;
  const bool ram_is_tier_;
  std::unordered_map<TierKey, TierKind, TierKeyHasher> origin_;  // RAM entries: where from.
  uint64_t next_ticket_ = 1;
  uint64_t demotions_ = 0, prefix_hits_[kNumTierKinds] = {};
  uint64_t prefetches_issued_ = 0, prefetches_useless_ = 0, prefetches_late_ = 0;
  uint64_t prefetched_blocks_ = 0;
  std::atomic<double> prefill_tokens_per_s_{0};  // EWMA; 0 until observed. Read by the I/O thread.

  // I/O thread (stores), plus the queues shared with the engine thread under mu_.
  std::unique_ptr<BlockStore> disk_, redis_;
  mutable std::mutex mu_;
  std::condition_variable io_wake_, idle_;
  std::deque<WriteJob> writes_;   // Guarded by mu_.
  std::deque<FetchJob> fetches_;  // Guarded by mu_.
  std::vector<FetchDone> done_;   // Guarded by mu_.
  uint64_t queued_write_bytes_ = 0, writes_dropped_ = 0;  // Guarded by mu_.
  int busy_ = 0;                  // Jobs taken but not finished. Guarded by mu_.
  bool stopping_ = false;         // Guarded by mu_.
  double bandwidth_[kNumTierKinds] = {};  // Guarded by mu_.
  double last_bandwidth_[kNumTierKinds] = {};  // Guarded by mu_.
  uint64_t corrupt_[kNumTierKinds] = {};  // Records that failed CheckRecord. Guarded by mu_.
  std::vector<std::vector<uint8_t>> spare_;  // Recycled block buffers. Guarded by mu_.
  uint64_t spare_bytes_ = 0;                 // Guarded by mu_.
  // I/O thread only: replies of the last batched read, reused so their buffers stay warm.
  std::vector<std::optional<std::vector<uint8_t>>> replies_;
  std::thread io_;
};

}  // namespace kvengine
