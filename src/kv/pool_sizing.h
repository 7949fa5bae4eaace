// How many blocks each KV group gets from a memory budget, and how many blocks one sequence holds.
// The planner (`kvengine plan`) and KvCacheManager both call these, so the numbers a user sees
// are exactly what the pool allocates.
//
// Policy (docs/kv-cache.md): every group has its own sub-pool of equally sized blocks, carved
// from one region. The budget is split in proportion to what one sequence of max_model_len
// tokens needs in each group, so at full context all groups run out together; a group's
// leftover bytes below one block are unused.
#pragma once

#include <cstdint>
#include <vector>

#include "kvengine/status.h"
#include "kv/group_spec.h"

namespace kvengine {

// Most blocks one sequence holds in `spec`'s group while it grows to `tokens` positions by
// decoding (or by prefill chunks of at most block_size tokens). Full and MLA groups:
// ceil(tokens / block_size). Windowed groups: the exact peak of sink blocks plus the blocks that
// touch the last `window` positions: at most ceil(S/B)*B + W + B tokens' worth. A prefill chunk of C > B tokens temporarily adds up to
// ceil(C/B) blocks in windowed groups, returned once the chunk is computed.
int64_t BlocksPerSequence(const KvGroupSpec& spec, int block_size, int64_t tokens);

struct PoolSizing {
  std::vector<int32_t> num_blocks;       // [groups]
  std::vector<uint64_t> bytes_per_block;  // [groups]
  std::vector<int64_t> blocks_per_seq;   // [groups] at max_model_len
  uint64_t total_bytes = 0;              // Sum of num_blocks * bytes_per_block.
};

// Splits `memory_bytes` among `groups`. Errors if a group would get no block at all.
Result<PoolSizing> SizePool(const std::vector<KvGroupSpec>& groups, int block_size,
                            uint64_t memory_bytes, int64_t max_model_len);

// Sizes a pool of exactly `num_blocks` blocks per group (tests, metadata-only pools).
PoolSizing SizePoolByBlocks(const std::vector<KvGroupSpec>& groups, int block_size,
                            int32_t num_blocks);

}  // namespace kvengine
