// ContiguousAllocator: KV memory managed the way pre-PagedAttention engines did it (Orca,
// FasterTransformer): every admitted sequence reserves one contiguous region of max_model_len
// token slots up front, whether it will ever fill them or not. It is the baseline `kvengine bench
// kv` compares paged policies against; the paged KvCacheManager has no such mode.
//
// Memory layout: region r covers token slots [r * region_tokens, (r + 1) * region_tokens) of one
// flat KV buffer (metadata only here: no bytes are allocated).
// Invariants: 0 <= fill(r) <= region_tokens; fill(r) == 0 for a free region; every region is
// either on the free stack or in use, never both.
//
// Owner: one simulation run; single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/group_spec.h"

namespace kvengine {

class ContiguousAllocator {
 public:
  ContiguousAllocator(int32_t num_regions, int64_t region_tokens);

  // Regions of `max_model_len` tokens that `memory_bytes` holds at the paged pool's exact bytes
  // per token (sum over groups of bytes_per_block / block_size, so both policies spend the same
  // budget at the same price per token): floor(memory * block_size / (sum_bpb * max_model_len)).
  // Every group reserves the full length (windowed groups included), as those engines did.
  static int32_t RegionsFor(const std::vector<KvGroupSpec>& groups, int block_size,
                            uint64_t memory_bytes, int64_t max_model_len);

  // Takes the lowest free region, empty; -1 when every region is in use.
  int32_t Reserve();
  // Stores `tokens` more tokens in `region`; false (nothing changed) past region_tokens.
  bool Grow(int32_t region, int64_t tokens);
  // Returns the region, emptied, to the free stack.
  void Free(int32_t region);

  int32_t num_regions() const { return static_cast<int32_t>(fill_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_in_use() const { return num_regions() - num_free(); }
  int64_t region_tokens() const { return region_tokens_; }
  int64_t fill(int32_t region) const { return fill_[Idx(region)]; }
  // First token slot of `region` in the flat buffer.
  int64_t slot_offset(int32_t region) const { return int64_t{region} * region_tokens_; }
  int64_t tokens_held() const { return tokens_held_; }
  // Slots reserved by regions in use (held or not).
  int64_t reserved_slots() const { return int64_t{num_in_use()} * region_tokens_; }
  int64_t capacity_slots() const { return int64_t{num_regions()} * region_tokens_; }

 private:
  static size_t Idx(int32_t r) { return static_cast<size_t>(r); }

  int64_t region_tokens_;
  int64_t tokens_held_ = 0;      // Sum of fill_ over regions in use.
  std::vector<int64_t> fill_;    // [num_regions] tokens stored in each region.
  std::vector<uint8_t> in_use_;  // [num_regions] 1 while reserved.
  std::vector<int32_t> free_;    // Stack of free regions; top (back) is the lowest id.
};

}  // namespace kvengine
