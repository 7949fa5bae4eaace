#include "kv/kv_group.h"

#include <cstring>
#include <utility>

namespace kvengine {

KvGroup::KvGroup(KvGroupSpec spec, int block_size, int32_t num_blocks, uint8_t* storage,
                 size_t evicted_history)
    : spec_(std::move(spec)),
      layout_(spec_, block_size),
      pool_(num_blocks),
      index_(num_blocks, evicted_history),
      storage_(storage),
      fill_(static_cast<size_t>(num_blocks), 0) {}

int32_t KvGroup::Take() {
  bool evicted = false;
  const int32_t b = pool_.Allocate(&evicted);
  if (b < 0) return b;
  if (evicted) {
    Demote(b);
    index_.Erase(b, /*evicted=*/true);
    ++evictions_;
  }
  fill_[static_cast<size_t>(b)] = 0;
  return b;
}

void KvGroup::Demote(int32_t block) {
  if (hook_ == nullptr || storage_ == nullptr) return;
  hook_->OnEvict(group_index_, index_.HashOf(block),
                 std::span<const uint8_t>(data(block), layout_.bytes_per_block()));
}

int32_t KvGroup::DemoteCached(int32_t max) {
  std::vector<int32_t> victims;
  pool_.ForEachEvictionCandidate([&](int32_t b) {
    if (static_cast<int32_t>(victims.size()) >= max) return false;
    victims.push_back(b);
    return true;
  });
  for (int32_t b : victims) {
    Demote(b);
    index_.Erase(b, /*evicted=*/true);
    pool_.Uncache(b);
    ++evictions_;
  }
  return static_cast<int32_t>(victims.size());
}

int32_t KvGroup::CopyOf(int32_t src) {
  const int32_t b = Take();
  if (b < 0) return b;
  if (storage_ != nullptr) std::memcpy(data(b), data(src), layout_.bytes_per_block());
  fill_[static_cast<size_t>(b)] = fill_[static_cast<size_t>(src)];
  return b;
}

}  // namespace kvengine
