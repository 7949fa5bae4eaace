#include "kv/pool_sizing.h"

#include <algorithm>
#include <limits>
#include <string>

#include "base/checked_math.h"
#include "base/size_parse.h"
#include "kv/block_layout.h"

namespace kvengine {

int64_t BlocksPerSequence(const KvGroupSpec& spec, int block_size, int64_t tokens) {
  if (tokens <= 0) return 0;
  const int64_t b = block_size;
  if (!spec.windowed()) return (tokens + b - 1) / b;
  // While position L is being decoded the sequence holds block j <= L/B unless it lies wholly
  // before the window's first position p = L - W + 1 and is not a sink block (j >= sink_blocks):
  //   held(L) = (L/B + 1) - max(0, p/B - sink_blocks).
  // Once p/B >= sink_blocks, held(L + B) == held(L): the function is periodic with period B, so
  // scanning L up to sink_blocks*B + W + 2B covers every value it takes. O(W) per call.
  const int64_t w = spec.window;
  const int64_t sink_blocks = (spec.sink_tokens + b - 1) / b;
  const int64_t scan_end = std::min(tokens - 1, sink_blocks * b + w + 2 * b);
  int64_t best = 0;
  for (int64_t l = 0; l <= scan_end; ++l) {
    const int64_t p = std::max<int64_t>(0, l - w + 1);
    best = std::max(best, (l / b + 1) - std::max<int64_t>(0, p / b - sink_blocks));
  }
  return best;
}

namespace {

// 128-bit products keep memory * blocks exact for any budget (GCC/Clang extension).
__extension__ typedef unsigned __int128 U128;

PoolSizing BaseSizing(const std::vector<KvGroupSpec>& groups, int block_size, int64_t tokens) {
  PoolSizing s;
  for (const KvGroupSpec& g : groups) {
    s.bytes_per_block.push_back(BlockLayout(g, block_size).bytes_per_block());
    s.blocks_per_seq.push_back(BlocksPerSequence(g, block_size, tokens));
  }
  return s;
}

}  // namespace

Result<PoolSizing> SizePool(const std::vector<KvGroupSpec>& groups, int block_size,
                            uint64_t memory_bytes, int64_t max_model_len) {
  if (groups.empty()) return InvalidArgument("a KV pool needs at least one group");
  if (max_model_len < 1) return InvalidArgument("max_model_len must be >= 1");
  PoolSizing s = BaseSizing(groups, block_size, max_model_len);
  // Bytes one full-length sequence needs across all groups.
  U128 per_seq = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    per_seq += static_cast<U128>(s.blocks_per_seq[g]) * s.bytes_per_block[g];
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    // num_blocks_g = floor(memory * blocks_per_seq_g / per_seq): sum of bytes <= memory.
    const U128 n =
        static_cast<U128>(memory_bytes) * s.blocks_per_seq[g] / per_seq;
    const int32_t capped = static_cast<int32_t>(
        std::min<U128>(n, std::numeric_limits<int32_t>::max() - 1));
    if (capped < 1) {
      return OutOfRange("KV memory " + FormatBytes(memory_bytes) + " holds no block of group " +
                        std::to_string(g) + " (" + groups[g].Describe() + ", " +
                        FormatBytes(s.bytes_per_block[g]) + " per block)");
    }
    s.num_blocks.push_back(capped);
    s.total_bytes += static_cast<uint64_t>(capped) * s.bytes_per_block[g];
  }
  return s;
}

PoolSizing SizePoolByBlocks(const std::vector<KvGroupSpec>& groups, int block_size,
                            int32_t num_blocks) {
  PoolSizing s = BaseSizing(groups, block_size, 1);
  for (size_t g = 0; g < groups.size(); ++g) {
    s.num_blocks.push_back(num_blocks);
    s.total_bytes += static_cast<uint64_t>(num_blocks) * s.bytes_per_block[g];
  }
  return s;
}

}  // namespace kvengine
