// RamTier: the host-RAM offload tier. Holds raw KV block payloads (the pool's own layout, no
// record header: this is the process's own memory, nothing to verify) keyed by TierKey, bounded
// by capacity_bytes, evicting the least recently used unpinned entry first.
//
// Owner: the engine loop thread (the tier manager's engine-side half). Not thread-safe, no locks:
// the engine thread demotes into it (one memcpy per block) and promotes out of it (one memcpy).
//
// Eviction hands each victim to the caller through `on_evict`, called before the victim's bytes
// are recycled, so the caller can cascade it to the disk tier (encode a record, queue a write).
// The span is valid only during the call; the callback must not call back into the RamTier.
//
// Memory: each entry owns one buffer of exactly its size. Freed buffers are kept in a free list
// by size and reused by later inserts of that size (steady state: one block size per group, so
// no allocation per insert). Invariant: live bytes + free-list bytes <= capacity_bytes, so the
// tier never holds more host memory than its capacity; free buffers of other sizes are released
// before any live entry is evicted.
//
// Pins: a pinned entry (pins > 0) is never evicted, and while pinned it is out of the recency
// order; on its last Unpin it becomes the most recently used. Pins count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "tier/lru_list.h"
#include "tier/tier_key.h"

namespace kvengine {

struct RamTierOptions {
  uint64_t capacity_bytes = 0;  // Host bytes for payloads (--swap-space); 0 holds only empties.
};

struct RamTierStats {
  uint64_t blocks = 0;  // Live entries.
  uint64_t bytes = 0;   // Live payload bytes.
  uint64_t capacity_bytes = 0;
  uint64_t pinned_blocks = 0;
  uint64_t free_buffer_bytes = 0;  // Recycled buffers waiting for a same-size insert.
  uint64_t hits = 0;               // CopyOut calls that copied.
  uint64_t misses = 0;             // CopyOut calls that found nothing (or the wrong size).
  uint64_t bytes_read = 0;         // Copied out by CopyOut.
  uint64_t bytes_written = 0;      // Copied in by Insert.
  uint64_t evictions = 0;          // Entries evicted to make room.
  uint64_t rejected = 0;           // Inserts that could not fit.
};

// Called with each evicted entry's key and bytes before the bytes are recycled.
using RamEvictFn = std::function<void(const TierKey& key, std::span<const uint8_t> bytes)>;

class RamTier {
 public:
  explicit RamTier(RamTierOptions options);
  RamTier(const RamTier&) = delete;
  RamTier& operator=(const RamTier&) = delete;

  // Stores a copy of `bytes` under `key`, replacing an existing entry (its pins carry over) and
  // evicting LRU unpinned entries as needed (each passed to `on_evict` if set). Returns false and
  // changes nothing when it cannot fit: larger than the capacity, or the pinned entries leave
  // too little room. A successful insert makes `key` the most recently used.
  bool Insert(const TierKey& key, std::span<const uint8_t> bytes, const RamEvictFn& on_evict = {});

  bool Contains(const TierKey& key) const { return index_.count(key) != 0; }
  // Payload size of `key`, nullopt when absent.
  std::optional<uint64_t> SizeOf(const TierKey& key) const;

  // Copies the entry into `dst` (one memcpy) and makes it the most recently used. False (a miss,
  // nothing copied) when absent or when dst.size() differs from the entry's size.
  bool CopyOut(const TierKey& key, std::span<uint8_t> dst);
  // The same copy without counting a hit or touching the LRU (spilling to disk is not a use).
  bool Peek(const TierKey& key, std::span<uint8_t> dst) const;

  // The entry must exist (KV_CHECK). Unpin must match an earlier Pin.
  void Pin(const TierKey& key);
  void Unpin(const TierKey& key);

  // Removes an unpinned entry; false when absent or pinned (then nothing changes).
  bool Erase(const TierKey& key);
  // Removes every unpinned entry (no on_evict calls). Their buffers stay on the free list
  // (within the capacity), so refilling the tier does not fault in fresh memory again.
  void Clear();

  RamTierStats Stats() const;
  // Unpinned keys in eviction order, least recently used first (tests, debugging).
  std::vector<TierKey> KeysLruFirst() const;

 private:
  using Buffer = std::unique_ptr<uint8_t[]>;
  struct Entry {
    TierKey key;
    Buffer data;  // [size] bytes; null when size == 0 or the slot is free.
    uint64_t size = 0;
    int32_t pins = 0;
    bool used = false;  // false: the slot is on free_slots_.
  };

  // A buffer of `size` bytes: recycled if the free list has one, else allocated after making
  // room (dropping free buffers of other sizes, then evicting). Caller checked it can fit.
  Buffer TakeBuffer(uint64_t size, const RamEvictFn& on_evict);
  void EvictLru(const RamEvictFn& on_evict);
  // Unlinks the slot, returns its buffer to the free list and frees the slot.
  void RemoveSlot(int32_t slot);
  void ReleaseFreeBuffers();

  const RamTierOptions options_;
  std::vector<Entry> entries_;                                      // [slot]
  std::vector<int32_t> free_slots_;                                 // Unused slot ids.
  std::unordered_map<TierKey, int32_t, TierKeyHasher> index_;       // key -> slot
  LruList lru_;                                                     // Unpinned live slots only.
  std::unordered_map<uint64_t, std::vector<Buffer>> free_buffers_;  // size -> recycled buffers
  uint64_t live_bytes_ = 0;
  uint64_t pinned_bytes_ = 0;  // Part of live_bytes_ held by pinned entries.
  uint64_t free_bytes_ = 0;    // Bytes in free_buffers_.
  bool in_callback_ = false;   // Guards against on_evict re-entering.
  RamTierStats counters_;      // hits, misses, bytes_read/written, evictions, rejected.
};

}  // namespace kvengine
