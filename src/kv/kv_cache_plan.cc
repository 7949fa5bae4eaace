// The read-only half of KvCacheManager: prefix lookups and step plans. Nothing here mutates.
#include <algorithm>
#include <unordered_set>

#include "kv/kv_cache_manager.h"
#include "kv/kv_sequence.h"

namespace kvengine {

std::vector<BlockHash> KvCacheManager::HashBlocks(const BlockHash& root,
                                                  std::span<const int32_t> tokens) const {
  const size_t b = size_t(config_.block_size);
  std::vector<BlockHash> hashes;
  hashes.reserve(tokens.size() / b);
  for (size_t j = 0; (j + 1) * b <= tokens.size(); ++j) {
    hashes.push_back(ChainBlockHash(j == 0 ? root : hashes.back(), tokens.subspan(j * b, b)));
  }
  return hashes;
}

bool KvCacheManager::WindowNeeds(const KvGroupSpec& spec, int64_t j, int64_t computed) const {
  // Once `computed` tokens are done the next query sits at position `computed` and sees
  // positions >= computed - window + 1, plus the sink tokens.
  const int64_t b = config_.block_size;
  if (j < (spec.sink_tokens + b - 1) / b) return true;
  return (j + 1) * b > computed - spec.window + 1;
}

PrefixLookup KvCacheManager::LookupPrefix(std::span<const int32_t> tokens,
                                          std::string_view cache_salt, int64_t max_tokens) const {
  PrefixLookup r;
  const int64_t b = config_.block_size;
  const int64_t n = static_cast<int64_t>(tokens.size());
  r.blocks.resize(groups_.size());
  if (!config_.enable_prefix_caching) {
    r.miss_never_cached = n / b * b;
    r.miss_partial = n % b;
    return r;
  }
  r.block_hashes = HashBlocks(PrefixRootHash(cache_namespace_, cache_salt), tokens);
  const std::vector<BlockHash>& h = r.block_hashes;
  const int64_t limit = std::clamp<int64_t>(max_tokens, 0, n) / b;
  // A block is available to group g if the pool holds it or a tier can fill it.
  auto in_pool = [&](size_t g, int64_t j) { return groups_[g]->index().Find(h[size_t(j)]) >= 0; };
  auto available = [&](size_t g, int64_t j) {
    return in_pool(g, j) || (tier_hook_ != nullptr && tier_hook_->Has(int(g), h[size_t(j)]));
  };
  // Full and MLA groups: the longest run of available blocks from the start, in every group.
  int64_t hit = limit;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g]->spec().windowed()) continue;
    int64_t run = 0;
    while (run < hit && available(g, run)) ++run;
    hit = run;
  }
  // Windowed groups need only the sinks and the last window's blocks of the prefix; take the
  // longest prefix every windowed group can serve.
  for (; hit > 0; --hit) {
    bool ok = true;
    for (size_t g = 0; g < groups_.size() && ok; ++g) {
      if (!groups_[g]->spec().windowed()) continue;
      for (int64_t j = 0; j < hit && ok; ++j) {
        if (WindowNeeds(groups_[g]->spec(), j, hit * b) && !available(g, j)) ok = false;
      }
    }
    if (ok) break;
  }
  std::vector<uint8_t> from_tier(size_t(hit), 0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const KvGroup& grp = *groups_[g];
    for (int64_t j = 0; j < hit; ++j) {
      const bool needed = !grp.spec().windowed() || WindowNeeds(grp.spec(), j, hit * b);
      int32_t blk = needed ? grp.index().Find(h[size_t(j)]) : -1;
      if (needed && blk < 0) {
        blk = kFromTier;
        from_tier[size_t(j)] = 1;
      }
      r.blocks[g].push_back(blk);
    }
  }
  for (uint8_t t : from_tier) r.tier_tokens += t * b;
  r.cached_tokens = hit * b;
  for (int64_t j = hit; j < n / b; ++j) {
    if (j >= limit) {
      r.miss_partial += b;
      continue;
    }
    bool seen = false;
    for (const auto& grp : groups_) {
      seen = seen || grp->index().WasEvicted(h[size_t(j)]) || grp->index().Find(h[size_t(j)]) >= 0;
    }
    (seen ? r.miss_evicted : r.miss_never_cached) += b;
  }
  r.miss_partial += n % b;
  return r;
}

void KvCacheManager::PlanOne(const AppendRequest& req, std::vector<int32_t>* new_blocks,
                             std::vector<std::vector<int32_t>>* revived,
                             PrefixLookup* lookup) const {
  const Sequence& s = Seq(req.seq);
  const int64_t b = config_.block_size;
  const int64_t n0 = static_cast<int64_t>(s.tokens.size());
  const int64_t n1 = n0 + static_cast<int64_t>(req.tokens.size());
  const int64_t have = (n0 + b - 1) / b;
  const int64_t total = (n1 + b - 1) / b;
  if (n0 == 0) {
    // A fresh sequence adopts its longest cached prefix; one token always runs.
    *lookup = LookupPrefix(req.tokens, s.salt, n1 - 1);
    const int64_t hit = lookup->cached_tokens / b;
    for (size_t g = 0; g < groups_.size(); ++g) {
      (*new_blocks)[g] += static_cast<int32_t>(total - hit);
      for (int32_t blk : lookup->blocks[g]) {
        if (blk >= 0 && groups_[g]->pool().refcount(blk) == 0) (*revived)[g].push_back(blk);
        if (blk == kFromTier) ++(*new_blocks)[g];  // A pool block to fill from the tier.
      }
    }
    return;
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    int32_t need = static_cast<int32_t>(total - have);
    // Copy-on-write of a shared partial last block.
    if (n0 % b != 0 && n1 > n0 && groups_[g]->pool().refcount(s.tables[g].back()) > 1) ++need;
    (*new_blocks)[g] += need;
  }
}

StepPlan KvCacheManager::PlanStep(std::span<const AppendRequest> requests) const {
  const size_t ng = groups_.size();
  StepPlan p;
  p.new_blocks.assign(ng, 0);
  p.available.resize(ng);
  p.evicted.resize(ng);
  std::vector<std::unordered_set<int32_t>> revived(ng);
  for (size_t g = 0; g < ng; ++g) p.available[g] = groups_[g]->pool().num_available();
  p.fits = true;
  for (const AppendRequest& req : requests) {
    std::vector<int32_t> need(ng, 0);
    std::vector<std::vector<int32_t>> rev(ng);
    PrefixLookup lookup;
    PlanOne(req, &need, &rev, &lookup);
    bool fits = true;
    for (size_t g = 0; g < ng && fits; ++g) {
      size_t new_revived = 0;
      for (int32_t blk : rev[g]) new_revived += revived[g].count(blk) == 0;
      fits = p.new_blocks[g] + need[g] + static_cast<int64_t>(revived[g].size() + new_revived) <=
             p.available[g];
    }
    p.cached_tokens.push_back(lookup.cached_tokens);
    if (!fits || !p.fits) {
      p.fits = false;
      continue;
    }
    ++p.num_fitting;
    for (size_t g = 0; g < ng; ++g) {
      p.new_blocks[g] += need[g];
      revived[g].insert(rev[g].begin(), rev[g].end());
    }
  }
  // Blocks beyond the free ones come from the LRU, oldest first, skipping revived hits.
  p.revived_blocks.resize(ng);
  for (size_t g = 0; g < ng; ++g) {
    p.revived_blocks[g] = static_cast<int32_t>(revived[g].size());
    int32_t from_lru = p.new_blocks[g] - groups_[g]->pool().num_free();
    groups_[g]->pool().ForEachEvictionCandidate([&](int32_t blk) {
      if (from_lru <= 0) return false;
      if (revived[g].count(blk)) return true;
      p.evicted[g].push_back(blk);
      --from_lru;
      return true;
    });
  }
  return p;
}

}  // namespace kvengine
