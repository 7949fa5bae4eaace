// PrefixIndex: which physical block holds the KV of a given BlockHash, for one KV group.
//
// Owner: one KvGroup (kv/kv_group.h); single-threaded (the engine loop thread).
// Invariants:
//   - a hash maps to at most one block and a block carries at most one hash;
//   - only full blocks whose KV has been computed are indexed (they are immutable while indexed);
//   - eviction order is not kept here: the pool's LRU of unreferenced blocks decides it.
// It also remembers the hashes of recently evicted blocks (bounded FIFO) so a lookup can tell
// "evicted earlier" from "never cached" when it reports why prompt tokens missed.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/block_hash.h"

namespace kvengine {

class PrefixIndex {
 public:
  // `num_blocks`: ids are in [0, num_blocks). `history`: evicted hashes remembered.
  PrefixIndex(int32_t num_blocks, size_t history);

  // Block holding `hash`, or -1.
  int32_t Find(const BlockHash& hash) const;
  // Indexes `block` under `hash`. Returns false (and changes nothing) if the hash is already
  // held by another block — two sequences computed the same block independently; the first wins.
  bool Insert(const BlockHash& hash, int32_t block);
  // Removes `block` from the index if it is indexed; `evicted` records it in the history.
  void Erase(int32_t block, bool evicted);
  bool IsIndexed(int32_t block) const { return indexed_[block] != 0; }
  const BlockHash& HashOf(int32_t block) const { return hash_of_[block]; }
  bool WasEvicted(const BlockHash& hash) const { return evicted_set_.count(hash) != 0; }
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> map_;
  std::vector<BlockHash> hash_of_;  // [num_blocks]; meaningful where indexed_.
  std::vector<uint8_t> indexed_;    // [num_blocks]; 1 if the block is in map_.
  // Recently evicted hashes: FIFO order in evicted_fifo_, membership in evicted_set_.
  size_t history_;
  std::deque<BlockHash> evicted_fifo_;
  std::unordered_set<BlockHash, BlockHashHasher> evicted_set_;
};

}  // namespace kvengine
