// BlockStore: the interface of the tiers that the tier manager's I/O thread drives (disk, Redis).
// A store keeps opaque records (block_record.h) by TierKey; it never interprets the payload. It
// may verify a record's framing and checksum on read (a damaged value is a miss, counted as
// corrupt), but the caller still checks identity (CheckRecord against the expected meta).
//
// Threads: every method except Stats() is called from ONE thread, the tier manager's I/O thread,
// and may block on I/O. Stats() may be called from any thread at any time: the counters behind
// it are atomics (BlockStoreCounters), so it never waits for an I/O call to finish.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "tier/tier_key.h"

namespace kvengine {

struct BlockStoreStats {
  uint64_t blocks = 0;          // Records held (0 where the store cannot know: Redis).
  uint64_t bytes = 0;           // Record bytes held (0 where unknown).
  uint64_t capacity_bytes = 0;  // 0: not bounded by this process (Redis: the server's maxmemory).
  uint64_t hits = 0;            // GetMany keys returned.
  uint64_t misses = 0;          // GetMany keys not returned, for any reason (below included).
  uint64_t errors = 0;          // Failed operations: I/O errors, error replies, lost connections.
  uint64_t corrupt = 0;         // Values that failed the framing/checksum check.
  uint64_t evictions = 0;       // Records removed to make room (disk).
  uint64_t skipped = 0;         // Operations answered without trying: reconnect backoff, breaker.
  uint64_t bytes_read = 0;      // Record bytes returned by GetMany.
  uint64_t bytes_written = 0;   // Record bytes stored by Put.
  uint64_t reconnects = 0;      // Redis: successful connects after the first.
  bool breaker_open = false;    // Redis: the circuit breaker refuses network calls now.
};

class BlockStore {
 public:
  virtual ~BlockStore() = default;

  // "disk", "redis": the `tier` label of the metrics.
  virtual std::string_view name() const = 0;
  // Stores `record` (an encoded block record) under `key`, replacing any previous value. A
  // failure is a returned Status (full, unreachable, refused), never an abort.
  virtual Status Put(const TierKey& key, std::span<const uint8_t> record) = 0;
  // Resizes *out to keys.size(); (*out)[i] holds the record of keys[i], or nullopt = miss,
  // whether absent, damaged or a failure. Vectors already in *out are reused where possible.
  virtual void GetMany(std::span<const TierKey> keys,
                       std::vector<std::optional<std::vector<uint8_t>>>* out) = 0;
  // Removes `key` if present; failures are counted, not returned (a cache may keep garbage).
  virtual void Erase(const TierKey& key) = 0;
  virtual BlockStoreStats Stats() const = 0;
};

// The counters of a store: written by its I/O thread, read by Stats() from any thread. Relaxed
// atomics: each counter is exact, a snapshot of several is not one instant (fine for metrics).
struct BlockStoreCounters {
  std::atomic<uint64_t> blocks{0}, bytes{0}, hits{0}, misses{0}, errors{0}, corrupt{0},
      evictions{0}, skipped{0}, bytes_read{0}, bytes_written{0}, reconnects{0};
  std::atomic<bool> breaker_open{false};

  static void Add(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }

  BlockStoreStats Snapshot(uint64_t capacity_bytes) const {
    constexpr auto r = std::memory_order_relaxed;
    BlockStoreStats s;
    s.blocks = blocks.load(r);
    s.bytes = bytes.load(r);
    s.capacity_bytes = capacity_bytes;
    s.hits = hits.load(r);
    s.misses = misses.load(r);
    s.errors = errors.load(r);
    s.corrupt = corrupt.load(r);
    s.evictions = evictions.load(r);
    s.skipped = skipped.load(r);
    s.bytes_read = bytes_read.load(r);
    s.bytes_written = bytes_written.load(r);
    s.reconnects = reconnects.load(r);
    s.breaker_open = breaker_open.load(r);
    return s;
  }
};

}  // namespace kvengine
