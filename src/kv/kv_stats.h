// KvStats: a snapshot of the KV cache for monitoring (/metrics, `run` summaries, benchmarks).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kv/block_layout.h"

namespace kvengine {

struct KvGroupStats {
  int32_t capacity_blocks = 0;
  int32_t free_blocks = 0;    // Refcount 0, nothing reusable.
  int32_t cached_blocks = 0;  // Refcount 0 but indexed: evictable, findable by prefix lookups.
  int32_t used_blocks = 0;    // Refcount >= 1.
  int32_t shared_blocks = 0;  // Refcount >= 2 (prefix sharing, forks).
  uint64_t bytes_per_block = 0;
  int64_t tokens_stored = 0;  // Filled slots of used blocks (a shared block counts once).
  int64_t slots_allocated = 0;  // used_blocks * block_size.
  int64_t evictions = 0;        // Cached blocks reclaimed since start.
};

struct KvStats {
  std::vector<KvGroupStats> groups;
  int block_size = 0;
  int64_t tokens_stored = 0;    // Sum over groups.
  int64_t slots_allocated = 0;  // Sum over groups.
  int64_t empty_slots = 0;      // slots_allocated - tokens_stored: internal fragmentation.
  uint64_t pool_bytes = 0;      // Whole pool, all groups.
  uint64_t used_bytes = 0;      // used_blocks * bytes_per_block, all groups.
  // Bytes of used blocks holding each dtype's data and scales (index: KvDtype), plus padding.
  std::array<uint64_t, kNumKvDtypes> used_bytes_by_dtype{};
  uint64_t used_padding_bytes = 0;
  int64_t num_sequences = 0;
  int64_t prefix_queries = 0;        // Lookups made for new sequences.
  int64_t prefix_query_tokens = 0;   // Prompt tokens those lookups covered.
  int64_t prefix_hit_tokens = 0;     // Of which served from cache (pool or a tier).
  int64_t prefix_tier_hit_tokens = 0;  // Of those, copied in from an offload tier.
  int64_t cow_copies = 0;            // Shared partial blocks copied on first write.

  double utilization() const {
    return slots_allocated == 0 ? 1.0 : static_cast<double>(tokens_stored) / slots_allocated;
  }
};

}  // namespace kvengine
