#include "kv/prefix_index.h"

#include "base/check.h"

namespace kvengine {

PrefixIndex::PrefixIndex(int32_t num_blocks, size_t history)
    : hash_of_(static_cast<size_t>(num_blocks)),
      indexed_(static_cast<size_t>(num_blocks), 0),
      history_(history) {}

int32_t PrefixIndex::Find(const BlockHash& hash) const {
  auto it = map_.find(hash);
  return it == map_.end() ? -1 : it->second;
}

bool PrefixIndex::Insert(const BlockHash& hash, int32_t block) {
  KV_DCHECK(!indexed_[block]);
  auto [it, inserted] = map_.emplace(hash, block);
  if (!inserted) return false;
  hash_of_[block] = hash;
  indexed_[block] = 1;
  // The evicted history may still name this hash; lookups only consult it for hashes that
  // are not indexed, so a stale entry is harmless and ages out of the FIFO.
  return true;
}

void PrefixIndex::Erase(int32_t block, bool evicted) {
  if (!indexed_[block]) return;
  const BlockHash& hash = hash_of_[block];
  map_.erase(hash);
  indexed_[block] = 0;
  if (!evicted || history_ == 0) return;
  if (evicted_set_.insert(hash).second) evicted_fifo_.push_back(hash);
  while (evicted_fifo_.size() > history_) {
    evicted_set_.erase(evicted_fifo_.front());
    evicted_fifo_.pop_front();
  }
}

}  // namespace kvengine
