// BlockPool: the metadata of one group's blocks — refcounts, the free stack and the LRU of
// evictable cached blocks. Storage bytes live elsewhere (KvGroup); this class only hands out ids.
//
// Owner: one KvGroup; single-threaded (the engine loop thread).
//
// Every block is in exactly one state:
//   kFree    refcount 0, holds nothing reusable            -> on free_ (a stack)
//   kCached  refcount 0, indexed in the prefix cache       -> on the LRU list (evictable)
//   kUsed    refcount >= 1, in some sequence's block table
// Allocation prefers free blocks and evicts the least recently used cached block only when none
// is free. Sequences release their blocks tail first, so within one sequence a child block is
// always older in the LRU than its parent: eviction takes leaves first.
//
// All operations are O(1). The LRU is an intrusive doubly linked list over int32 arrays (no
// per-block heap objects); index num_blocks is its sentinel.
#pragma once

#include <cstdint>
#include <vector>

#include "base/check.h"

namespace kvengine {

enum class BlockState : uint8_t { kFree, kCached, kUsed };

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_cached() const { return num_cached_; }
  int32_t num_available() const { return num_free() + num_cached_; }
  int32_t num_used() const { return num_blocks_ - num_available(); }
  int32_t num_shared() const { return num_shared_; }
  int32_t refcount(int32_t block) const { return refcount_[Idx(block)]; }
  BlockState state(int32_t block) const { return state_[Idx(block)]; }

  // Takes a block with refcount 1: a free one if any, else the least recently used cached one
  // (then *evicted is set so the caller can unindex it). Returns -1 if no block is available.
  int32_t Allocate(bool* evicted);
  // Adds a reference. A cached block leaves the LRU (a prefix hit revives it).
  void AddRef(int32_t block);
  // Drops a reference. At zero the block becomes kCached (most recently used end of the LRU) if
  // `keep_cached`, else kFree.
  void Release(int32_t block, bool keep_cached);
  // A cached block that lost its index entry becomes free.
  void Uncache(int32_t block);

  // Calls f(block) for cached blocks from least to most recently used while f returns true.
  template <typename F>
  void ForEachEvictionCandidate(F f) const {
    for (int32_t b = next_[Idx(num_blocks_)]; b != num_blocks_; b = next_[Idx(b)]) {
      if (!f(b)) return;
    }
  }

 private:
  static size_t Idx(int32_t b) { return static_cast<size_t>(b); }
  void LruPushBack(int32_t block);
  void LruRemove(int32_t block);

  int32_t num_blocks_;
  int32_t num_cached_ = 0;
  int32_t num_shared_ = 0;
  std::vector<int32_t> refcount_;  // [num_blocks]
  std::vector<BlockState> state_;  // [num_blocks]
  std::vector<int32_t> free_;      // Stack of kFree ids; top = back.
  std::vector<int32_t> prev_;      // [num_blocks + 1]; LRU links, sentinel at num_blocks.
  std::vector<int32_t> next_;      // [num_blocks + 1]
};

}  // namespace kvengine
