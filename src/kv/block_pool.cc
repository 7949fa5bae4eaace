#include "kv/block_pool.h"

namespace kvengine {

BlockPool::BlockPool(int32_t num_blocks)
    : num_blocks_(num_blocks),
      refcount_(Idx(num_blocks), 0),
      state_(Idx(num_blocks), BlockState::kFree),
      prev_(Idx(num_blocks) + 1, num_blocks),
      next_(Idx(num_blocks) + 1, num_blocks) {
  KV_CHECK(num_blocks >= 0);
  free_.reserve(Idx(num_blocks));
  // Lowest ids on top: a fresh pool hands out 0, 1, 2, ...
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t BlockPool::Allocate(bool* evicted) {
  *evicted = false;
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (num_cached_ > 0) {
    b = next_[Idx(num_blocks_)];
    LruRemove(b);
    *evicted = true;
  } else {
    return -1;
  }
  state_[Idx(b)] = BlockState::kUsed;
  refcount_[Idx(b)] = 1;
  return b;
}

void BlockPool::AddRef(int32_t block) {
  const size_t i = Idx(block);
  switch (state_[i]) {
    case BlockState::kCached:
      LruRemove(block);
      state_[i] = BlockState::kUsed;
      break;
    case BlockState::kUsed:
      if (refcount_[i] == 1) ++num_shared_;
      break;
    case BlockState::kFree:
      KV_CHECK(false) << "AddRef on free block " << block;
      break;
  }
  ++refcount_[i];
}

void BlockPool::Release(int32_t block, bool keep_cached) {
  const size_t i = Idx(block);
  KV_CHECK(state_[i] == BlockState::kUsed && refcount_[i] > 0) << "double free of block " << block;
  if (refcount_[i] == 2) --num_shared_;
  if (--refcount_[i] > 0) return;
  if (keep_cached) {
    state_[i] = BlockState::kCached;
    LruPushBack(block);
  } else {
    state_[i] = BlockState::kFree;
    free_.push_back(block);
  }
}

void BlockPool::Uncache(int32_t block) {
  KV_CHECK(state_[Idx(block)] == BlockState::kCached);
  LruRemove(block);
  state_[Idx(block)] = BlockState::kFree;
  free_.push_back(block);
}

void BlockPool::LruPushBack(int32_t block) {
  const int32_t s = num_blocks_;
  const int32_t last = prev_[Idx(s)];
  prev_[Idx(block)] = last;
  next_[Idx(block)] = s;
  next_[Idx(last)] = block;
  prev_[Idx(s)] = block;
  ++num_cached_;
}

void BlockPool::LruRemove(int32_t block) {
  const int32_t p = prev_[Idx(block)];
  const int32_t n = next_[Idx(block)];
  next_[Idx(p)] = n;
  prev_[Idx(n)] = p;
  prev_[Idx(block)] = next_[Idx(block)] = num_blocks_;
  --num_cached_;
}

}  // namespace kvengine
