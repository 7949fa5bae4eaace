// KV sizing for the engine: the capacity line for the server log and the up-front rejection of
// requests that can never fit, with what would make them fit. Every figure comes from the same
// functions the pool and the planner (`kvengine plan`) use: BlockLayout, BlocksPerSequence and
// SizePool, so they agree with what is allocated.
#include <algorithm>
#include <numeric>
#include <set>

#include "base/size_parse.h"
#include "kv/block_layout.h"
#include "kv/pool_sizing.h"
#include "runtime/engine_internal.h"

namespace kvengine::engine_internal {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool FitsIn(const std::vector<int64_t>& need, const std::vector<int32_t>& blocks) {
  for (size_t g = 0; g < need.size(); ++g) {
    if (need[g] > blocks[g]) return false;
  }
  return true;
}

uint64_t BytesPerTokenOf(const std::vector<uint64_t>& bytes_per_block, int block_size) {
  const uint64_t sum = std::accumulate(bytes_per_block.begin(), bytes_per_block.end(), uint64_t{0});
  return (sum + uint64_t(block_size) - 1) / uint64_t(block_size);
}

std::vector<KvGroupSpec> WithDtype(std::vector<KvGroupSpec> groups, KvDtype dtype) {
  for (KvGroupSpec& g : groups) {
    for (LayerKvDtypes& d : g.dtypes) d = LayerKvDtypes{dtype, dtype};
  }
  return groups;
}

// The pool a memory budget of `memory` bytes gives `groups` (the engine's own sizing rule).
std::vector<int32_t> BlocksFor(const std::vector<KvGroupSpec>& groups, int block_size,
                               uint64_t memory, int64_t max_model_len) {
  Result<PoolSizing> s = SizePool(groups, block_size, memory, max_model_len);
  if (!s.ok()) return std::vector<int32_t>(groups.size(), 0);
  return s->num_blocks;
}

// "f16", or "mixed dtypes" when layers differ.
std::string DtypeNames(const std::vector<KvGroupSpec>& groups) {
  std::set<std::string> names;
  for (const KvGroupSpec& g : groups) {
    for (const LayerKvDtypes& d : g.dtypes) {
      names.insert(std::string(KvDtypeName(d.k)));
      names.insert(std::string(KvDtypeName(d.v)));
    }
  }
  return names.size() == 1 ? *names.begin() : "mixed dtypes";
}

}  // namespace

KvCapacity KvCapacity::Of(const KvCacheManager& kv, bool contiguous) {
  KvCapacity c;
  c.block_size = kv.block_size();
  c.max_model_len = kv.config().max_model_len;
  c.pool_bytes = kv.sizing().total_bytes;
  c.contiguous = contiguous;
  for (int g = 0; g < kv.num_groups(); ++g) {
    c.groups.push_back(kv.group(g).spec());
    c.num_blocks.push_back(kv.sizing().num_blocks[size_t(g)]);
    c.bytes_per_block.push_back(kv.sizing().bytes_per_block[size_t(g)]);
  }
  return c;
}

uint64_t KvCapacity::BytesPerToken() const { return BytesPerTokenOf(bytes_per_block, block_size); }

int64_t KvCapacity::MaxSequencesAtMaxLen() const {
  int64_t best = INT64_MAX;
  for (size_t g = 0; g < groups.size(); ++g) {
    best = std::min(best, num_blocks[g] / BlocksPerSequence(groups[g], block_size, max_model_len));
  }
  return best;
}

std::vector<int64_t> KvCapacity::RequestBlocks(int64_t prompt, int64_t max_tokens, int n) const {
  const int64_t b = block_size, total = prompt + max_tokens;
  std::vector<int64_t> need;
  for (const KvGroupSpec& g : groups) {
    if (contiguous) {
      need.push_back(n * BlocksPerSequence(g, block_size, max_model_len));
    } else if (g.windowed()) {
      need.push_back(n * BlocksPerSequence(g, block_size, total));
    } else {
      // The prompt's full blocks are shared by every choice; each choice holds the rest,
      // including its copy of a shared partial block.
      const int64_t shared = prompt / b;
      need.push_back(shared + n * (CeilDiv(total, b) - shared));
    }
  }
  return need;
}

Status KvCapacity::CheckRequestFits(int64_t prompt, int64_t max_tokens, int n) const {
  const std::vector<int64_t> need = RequestBlocks(prompt, max_tokens, n);
  if (FitsIn(need, num_blocks)) return Status::Ok();
  uint64_t need_bytes = 0;
  int64_t need_blocks = 0;
  for (size_t g = 0; g < need.size(); ++g) {
    need_bytes += uint64_t(need[g]) * bytes_per_block[g];
    need_blocks += need[g];
  }
  const int64_t pool_blocks = std::accumulate(num_blocks.begin(), num_blocks.end(), int64_t{0});
  const int64_t total = prompt + max_tokens;
  std::string msg = "the request needs " + FormatBytes(need_bytes) + " of KV (" +
                    (n > 1 ? std::to_string(n) + " choices x " : std::string()) +
                    std::to_string(contiguous ? max_model_len : total) + " tokens" +
                    (contiguous ? " reserved per sequence (contiguous KV policy)" : "") + ", " +
                    std::to_string(need_blocks) + " blocks of " + std::to_string(block_size) +
                    " tokens at " + std::to_string(BytesPerToken()) +
                    " bytes/token) but the KV pool holds " + FormatBytes(pool_bytes) + " (" +
                    std::to_string(pool_blocks) + " blocks)";
  std::vector<std::string> fixes;
  // A narrower KV dtype in the same memory.
  for (KvDtype d : {KvDtype::kInt8, KvDtype::kInt4}) {
    const std::vector<KvGroupSpec> narrow = WithDtype(groups, d);
    std::vector<uint64_t> bpb;
    for (const KvGroupSpec& g : narrow) bpb.push_back(BlockLayout(g, block_size).bytes_per_block());
    if (BytesPerTokenOf(bpb, block_size) >= BytesPerToken()) continue;
    if (FitsIn(need, BlocksFor(narrow, block_size, pool_bytes, max_model_len))) {
      fixes.push_back(std::string(KvDtypeName(d)) + " KV (" +
                      std::to_string(BytesPerTokenOf(bpb, block_size)) + " bytes/token)");
      break;
    }
  }
  // A smaller request or context in the same pool.
  if (contiguous) {
    int64_t len = max_model_len;
    while (len > 0) {
      bool fits = true;
      for (size_t g = 0; g < groups.size(); ++g) {
        fits = fits && n * BlocksPerSequence(groups[g], block_size, len) <= num_blocks[g];
      }
      if (fits) break;
      len = len > block_size ? len - block_size : len - 1;
    }
    if (len > 0) fixes.push_back("a max_model_len of at most " + std::to_string(len));
  } else {
    int64_t lo = 0, hi = total;  // Invariant: lo == 0 or lo tokens fit; hi tokens do not.
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      const int64_t p = std::min(prompt, mid);
      (FitsIn(RequestBlocks(p, mid - p, n), num_blocks) ? lo : hi) = mid;
    }
    if (lo > 0) {
      fixes.push_back("at most " + std::to_string(lo) + " tokens of prompt + max_tokens" +
                      (n > 1 ? " per choice" : ""));
    }
  }
  if (n > 1) {
    int fewer = n - 1;
    while (fewer > 0 && !FitsIn(RequestBlocks(prompt, max_tokens, fewer), num_blocks)) --fewer;
    if (fewer > 0) fixes.push_back("n of at most " + std::to_string(fewer));
  }
  // More memory, sized as the engine sizes its pool.
  uint64_t hi = std::max<uint64_t>(need_bytes, 1);
  for (int i = 0; i < 64 && !FitsIn(need, BlocksFor(groups, block_size, hi, max_model_len)); ++i) {
    hi *= 2;
  }
  if (FitsIn(need, BlocksFor(groups, block_size, hi, max_model_len))) {
    uint64_t lo = need_bytes > 0 ? need_bytes - 1 : 0;  // lo does not fit (or is 0).
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      (FitsIn(need, BlocksFor(groups, block_size, mid, max_model_len)) ? hi : lo) = mid;
    }
    fixes.push_back("at least " + FormatBytes(hi) + " of KV memory (--kv-cache-memory-bytes)");
  }
  if (!fixes.empty()) {
    msg += "; it would fit with ";
    for (size_t i = 0; i < fixes.size(); ++i) {
      if (i > 0) msg += i + 1 == fixes.size() ? ", or " : ", ";
      msg += fixes[i];
    }
  }
  return OutOfRange(msg);
}

std::string KvCapacity::Describe() const {
  std::string blocks;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) blocks += " + ";
    blocks += std::to_string(num_blocks[g]);
  }
  std::string s = "KV pool " + blocks + " blocks";
  if (groups.size() > 1) {
    s += " (";
    for (size_t g = 0; g < groups.size(); ++g) s += (g > 0 ? ", " : "") + groups[g].Describe();
    s += ")";
  }
  s += " x " + std::to_string(block_size) + " tokens = " + FormatBytes(pool_bytes) + " (" +
       DtypeNames(groups) + "), " + std::to_string(BytesPerToken()) + " bytes/token, max " +
       std::to_string(MaxSequencesAtMaxLen()) + " concurrent sequences at max_model_len " +
       std::to_string(max_model_len);
  if (contiguous) s += " (contiguous KV policy: each sequence reserves max_model_len)";
  return s;
}

}  // namespace kvengine::engine_internal
