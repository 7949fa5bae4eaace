// KvGroup: one KV group's block storage, pool metadata and prefix index, kept consistent.
//
// Owner: KvCacheManager; single-threaded (the engine loop thread).
// Storage: `storage` points at num_blocks * layout.bytes_per_block() bytes inside the manager's
// arena (or is null for a metadata-only pool, used by workload simulation).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_layout.h"
#include "kv/block_pool.h"
#include "kv/group_spec.h"
#include "kv/tier_hook.h"
#include "kv/prefix_index.h"

namespace kvengine {

class KvGroup {
 public:
  KvGroup(KvGroupSpec spec, int block_size, int32_t num_blocks, uint8_t* storage,
          size_t evicted_history);

  const KvGroupSpec& spec() const { return spec_; }
  const BlockLayout& layout() const { return layout_; }
  const BlockPool& pool() const { return pool_; }
  const PrefixIndex& index() const { return index_; }

  // Tiers below the pool; null: none. `group_index` is this group's index in the manager.
  void set_tier_hook(KvTierHook* hook, int group_index) {
    hook_ = hook;
    group_index_ = group_index;
  }
  KvTierHook* tier_hook() const { return hook_; }

  // Takes a block (evicting the LRU cached block if none is free, which hands its bytes to the
  // tier hook first); -1 if none is available. The new block's fill count is 0.
  int32_t Take();
  // Evicts up to `max` cached blocks, least recently used first, through the tier hook, and
  // frees them; returns how many. (Tier benchmarks and a persisting shutdown use it.)
  int32_t DemoteCached(int32_t max);
  void AddRef(int32_t block) { pool_.AddRef(block); }
  // Drops a reference; an indexed block stays findable (cached) when it reaches zero.
  void Release(int32_t block) { pool_.Release(block, index_.IsIndexed(block)); }
  // Indexes a full, computed block; false if another block already holds the hash.
  bool Index(const BlockHash& hash, int32_t block) { return index_.Insert(hash, block); }
  // Removes a referenced block from the index (it is about to be overwritten).
  void Unindex(int32_t block) { index_.Erase(block, /*evicted=*/false); }
  // A new block with refcount 1 holding a copy of `src`'s bytes and fill count; -1 if none.
  int32_t CopyOf(int32_t src);

  // Positions of the block written so far (0..block_size); shared by all its holders.
  int fill(int32_t block) const { return fill_[static_cast<size_t>(block)]; }
  void set_fill(int32_t block, int n) { fill_[static_cast<size_t>(block)] = static_cast<uint16_t>(n); }

  uint8_t* data(int32_t block) const {
    return storage_ == nullptr ? nullptr
                               : storage_ + static_cast<size_t>(block) * layout_.bytes_per_block();
  }
  bool has_storage() const { return storage_ != nullptr; }
  const uint8_t* storage() const { return storage_; }
  int64_t evictions() const { return evictions_; }

 private:
  KvGroupSpec spec_;
  BlockLayout layout_;
  BlockPool pool_;
  PrefixIndex index_;
  uint8_t* storage_;
  std::vector<uint16_t> fill_;  // [num_blocks]
  int64_t evictions_ = 0;
  KvTierHook* hook_ = nullptr;
  int group_index_ = 0;

  // Hands a cached block's bytes to the tier hook before they are reused.
  void Demote(int32_t block);
};

}  // namespace kvengine
