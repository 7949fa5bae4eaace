#include "bench/kv/contiguous_allocator.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "base/check.h"
#include "base/checked_math.h"
#include "kv/block_layout.h"

namespace kvengine {

ContiguousAllocator::ContiguousAllocator(int32_t num_regions, int64_t region_tokens)
    : region_tokens_(region_tokens) {
  KV_CHECK(num_regions >= 0 && region_tokens >= 1);
  fill_.assign(Idx(num_regions), 0);
  in_use_.assign(Idx(num_regions), 0);
  free_.reserve(Idx(num_regions));
  for (int32_t r = num_regions; r-- > 0;) free_.push_back(r);
}

int32_t ContiguousAllocator::RegionsFor(const std::vector<KvGroupSpec>& groups, int block_size,
                                        uint64_t memory_bytes, int64_t max_model_len) {
  if (groups.empty() || block_size < 1 || max_model_len < 1) return 0;
  uint64_t sum_bpb = 0;
  for (const KvGroupSpec& g : groups) sum_bpb += BlockLayout(g, block_size).bytes_per_block();
  if (sum_bpb == 0) return 0;
  // floor(memory * B / (sum_bpb * L)) without 128-bit arithmetic. With memory = q * sum_bpb + r,
  // memory * B / sum_bpb = q * B + r * B / sum_bpb, and floor(floor(x) / L) == floor(x / L).
  const uint64_t b = static_cast<uint64_t>(block_size);
  const uint64_t q = memory_bytes / sum_bpb;
  const uint64_t r = memory_bytes % sum_bpb;
  uint64_t qb = 0;
  uint64_t rb = 0;
  uint64_t tokens = 0;  // floor(memory * B / sum_bpb): token slots the budget buys.
  if (!CheckedMul(q, b, &qb) || !CheckedMul(r, b, &rb) || !CheckedAdd(qb, rb / sum_bpb, &tokens)) {
    tokens = std::numeric_limits<uint64_t>::max();
  }
  const uint64_t n = tokens / static_cast<uint64_t>(max_model_len);
  return static_cast<int32_t>(
      std::min<uint64_t>(n, static_cast<uint64_t>(std::numeric_limits<int32_t>::max() - 1)));
}

int32_t ContiguousAllocator::Reserve() {
  if (free_.empty()) return -1;
  const int32_t r = free_.back();
  free_.pop_back();
  KV_DCHECK(!in_use_[Idx(r)] && fill_[Idx(r)] == 0);
  in_use_[Idx(r)] = 1;
  return r;
}

bool ContiguousAllocator::Grow(int32_t region, int64_t tokens) {
  KV_CHECK(region >= 0 && region < num_regions() && in_use_[Idx(region)]) << "region " << region;
  KV_CHECK(tokens >= 0);
  if (fill_[Idx(region)] + tokens > region_tokens_) return false;
  fill_[Idx(region)] += tokens;
  tokens_held_ += tokens;
  return true;
}

void ContiguousAllocator::Free(int32_t region) {
  KV_CHECK(region >= 0 && region < num_regions() && in_use_[Idx(region)]) << "region " << region;
  tokens_held_ -= fill_[Idx(region)];
  fill_[Idx(region)] = 0;
  in_use_[Idx(region)] = 0;
  // Keep the stack sorted so Reserve hands out the lowest free id (deterministic layout).
  auto pos = std::upper_bound(free_.begin(), free_.end(), region, std::greater<int32_t>());
  free_.insert(pos, region);
}

}  // namespace kvengine
