// LruList: a recency order over integer slot ids, as two index arrays (no node objects, no
// allocation once the arrays have grown to the number of slots). The tiers keep their entries
// in slot arrays and link the evictable ones here: Lru() is the next victim.
//
// Not thread-safe; owned by the tier that holds the slots.
#pragma once

#include <cstdint>
#include <vector>

#include "base/check.h"

namespace kvengine {

class LruList {
 public:
  static constexpr int32_t kNone = -1;

  // Makes slot ids 0..n-1 usable (never shrinks).
  void Reserve(size_t n) {
    if (n <= prev_.size()) return;
    prev_.resize(n, kNone);
    next_.resize(n, kNone);
    linked_.resize(n, 0);
  }

  bool Linked(int32_t s) const { return size_t(s) < linked_.size() && linked_[size_t(s)] != 0; }
  size_t size() const { return size_; }
  int32_t Lru() const { return head_; }  // kNone when empty.

  // Links `s` as the most recently used.
  void PushMru(int32_t s) {
    KV_DCHECK(!Linked(s));
    Reserve(size_t(s) + 1);
    prev_[size_t(s)] = tail_;
    next_[size_t(s)] = kNone;
    if (tail_ != kNone) {
      next_[size_t(tail_)] = s;
    } else {
      head_ = s;
    }
    tail_ = s;
    linked_[size_t(s)] = 1;
    ++size_;
  }

  void Remove(int32_t s) {
    KV_DCHECK(Linked(s));
    const int32_t p = prev_[size_t(s)];
    const int32_t n = next_[size_t(s)];
    if (p != kNone) {
      next_[size_t(p)] = n;
    } else {
      head_ = n;
    }
    if (n != kNone) {
      prev_[size_t(n)] = p;
    } else {
      tail_ = p;
    }
    linked_[size_t(s)] = 0;
    --size_;
  }

  void Touch(int32_t s) {
    Remove(s);
    PushMru(s);
  }

  // Linked slots, least recently used first.
  std::vector<int32_t> Order() const {
    std::vector<int32_t> out;
    out.reserve(size_);
    for (int32_t s = head_; s != kNone; s = next_[size_t(s)]) out.push_back(s);
    return out;
  }

 private:
  std::vector<int32_t> prev_, next_;  // [slot] neighbours toward LRU / toward MRU.
  std::vector<uint8_t> linked_;       // [slot] 1 while in the list.
  int32_t head_ = kNone;              // Least recently used.
  int32_t tail_ = kNone;              // Most recently used.
  size_t size_ = 0;
};

}  // namespace kvengine
