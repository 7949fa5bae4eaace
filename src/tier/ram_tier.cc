#include "tier/ram_tier.h"

#include <cstring>

#include "base/check.h"

namespace kvengine {

RamTier::RamTier(RamTierOptions options) : options_(options) {}

std::optional<uint64_t> RamTier::SizeOf(const TierKey& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return entries_[size_t(it->second)].size;
}

bool RamTier::Insert(const TierKey& key, std::span<const uint8_t> bytes,
                     const RamEvictFn& on_evict) {
  KV_CHECK(!in_callback_) << "RamTier re-entered from on_evict";
  const uint64_t n = bytes.size();
  auto it = index_.find(key);
  int32_t pins = 0;
  if (it != index_.end()) {
    Entry& old = entries_[size_t(it->second)];
    if (old.size == n) {  // Same size: overwrite in place, no eviction, no allocation.
      if (n != 0) std::memcpy(old.data.get(), bytes.data(), n);
      if (old.pins == 0) lru_.Touch(it->second);
      counters_.bytes_written += n;
      return true;
    }
    // Different size: fits iff the pinned bytes other than the old entry's, plus n, fit.
    const uint64_t other_pinned = pinned_bytes_ - (old.pins > 0 ? old.size : 0);
    if (n > options_.capacity_bytes || other_pinned > options_.capacity_bytes - n) {
      ++counters_.rejected;
      return false;
    }
    pins = old.pins;
    if (pins > 0) pinned_bytes_ -= old.size;
    old.pins = 0;
    RemoveSlot(it->second);
  } else if (n > options_.capacity_bytes || pinned_bytes_ > options_.capacity_bytes - n) {
    // Even evicting every unpinned entry would not make room.
    ++counters_.rejected;
    return false;
  }

  Buffer data = TakeBuffer(n, on_evict);
  if (n != 0) std::memcpy(data.get(), bytes.data(), n);
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[size_t(slot)];
  e.key = key;
  e.data = std::move(data);
  e.size = n;
  e.pins = pins;
  e.used = true;
  index_.emplace(key, slot);
  live_bytes_ += n;
  if (pins > 0) {
    pinned_bytes_ += n;
  } else {
    lru_.PushMru(slot);
  }
  counters_.bytes_written += n;
  return true;
}

RamTier::Buffer RamTier::TakeBuffer(uint64_t size, const RamEvictFn& on_evict) {
  if (size == 0) return nullptr;
  // Terminates: the caller checked pinned_bytes_ + size <= capacity, and each turn either
  // returns, drops a free buffer, or evicts an unpinned entry.
  while (true) {
    auto it = free_buffers_.find(size);
    if (it != free_buffers_.end() && !it->second.empty()) {
      Buffer b = std::move(it->second.back());
      it->second.pop_back();
      free_bytes_ -= size;
      return b;
    }
    if (options_.capacity_bytes - live_bytes_ - free_bytes_ >= size) {
      return std::make_unique_for_overwrite<uint8_t[]>(size);
    }
    if (free_bytes_ > 0) {
      ReleaseFreeBuffers();  // None has this size; all of them are in the way.
      continue;
    }
    KV_CHECK(lru_.size() > 0) << "RamTier accounting: no room and nothing evictable";
    EvictLru(on_evict);  // Its buffer goes to the free list, maybe the size we need.
  }
}

void RamTier::EvictLru(const RamEvictFn& on_evict) {
  const int32_t slot = lru_.Lru();
  Entry& e = entries_[size_t(slot)];
  if (on_evict) {
    in_callback_ = true;
    on_evict(e.key, std::span<const uint8_t>(e.data.get(), e.size));
    in_callback_ = false;
  }
  ++counters_.evictions;
  RemoveSlot(slot);
}

void RamTier::RemoveSlot(int32_t slot) {
  Entry& e = entries_[size_t(slot)];
  KV_DCHECK(e.used && e.pins == 0);
  if (lru_.Linked(slot)) lru_.Remove(slot);  // Not linked: a pinned entry being replaced.
  index_.erase(e.key);
  live_bytes_ -= e.size;
  if (e.size != 0) {
    // Always fits the invariant: the bytes move from live to free.
    free_buffers_[e.size].push_back(std::move(e.data));
    free_bytes_ += e.size;
  }
  e = Entry{};
  free_slots_.push_back(slot);
}

void RamTier::ReleaseFreeBuffers() {
  free_buffers_.clear();
  free_bytes_ = 0;
}

bool RamTier::CopyOut(const TierKey& key, std::span<uint8_t> dst) {
  auto it = index_.find(key);
  if (it == index_.end() || entries_[size_t(it->second)].size != dst.size()) {
    ++counters_.misses;
    return false;
  }
  Entry& e = entries_[size_t(it->second)];
  if (e.size != 0) std::memcpy(dst.data(), e.data.get(), e.size);
  if (e.pins == 0) lru_.Touch(it->second);
  ++counters_.hits;
  counters_.bytes_read += e.size;
  return true;
}

void RamTier::Pin(const TierKey& key) {
  auto it = index_.find(key);
  KV_CHECK(it != index_.end()) << "Pin of absent key " << key.Name();
  Entry& e = entries_[size_t(it->second)];
  if (e.pins++ == 0) {
    lru_.Remove(it->second);
    pinned_bytes_ += e.size;
  }
}

void RamTier::Unpin(const TierKey& key) {
  auto it = index_.find(key);
  KV_CHECK(it != index_.end()) << "Unpin of absent key " << key.Name();
  Entry& e = entries_[size_t(it->second)];
  KV_CHECK(e.pins > 0) << "Unpin without Pin: " << key.Name();
  if (--e.pins == 0) {
    pinned_bytes_ -= e.size;
    lru_.PushMru(it->second);
  }
}

bool RamTier::Erase(const TierKey& key) {
  KV_CHECK(!in_callback_) << "RamTier re-entered from on_evict";
  auto it = index_.find(key);
  if (it == index_.end() || entries_[size_t(it->second)].pins > 0) return false;
  RemoveSlot(it->second);
  return true;
}

void RamTier::Clear() {
  KV_CHECK(!in_callback_) << "RamTier re-entered from on_evict";
  for (int32_t slot : lru_.Order()) RemoveSlot(slot);
}

bool RamTier::Peek(const TierKey& key, std::span<uint8_t> dst) const {
  auto it = index_.find(key);
  if (it == index_.end() || entries_[size_t(it->second)].size != dst.size()) return false;
  const Entry& e = entries_[size_t(it->second)];
  if (e.size != 0) std::memcpy(dst.data(), e.data.get(), e.size);
  return true;
}

RamTierStats RamTier::Stats() const {
  RamTierStats s = counters_;
  s.blocks = index_.size();
  s.bytes = live_bytes_;
  s.capacity_bytes = options_.capacity_bytes;
  s.pinned_blocks = index_.size() - lru_.size();
  s.free_buffer_bytes = free_bytes_;
  return s;
}

std::vector<TierKey> RamTier::KeysLruFirst() const {
  std::vector<TierKey> keys;
  for (int32_t slot : lru_.Order()) keys.push_back(entries_[size_t(slot)].key);
  return keys;
}

}  // namespace kvengine
