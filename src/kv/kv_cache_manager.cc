// Sequence lifecycle of KvCacheManager: create, append (commit), compute, fork, truncate,
// release, and K/V row access. Lookups and plans live in kv_cache_plan.cc, stats in
// kv_cache_stats.cc.
#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <utility>

#include "kv/kv_sequence.h"
#include "quant/codec.h"

namespace kvengine {

namespace {

Status ValidateConfig(const KvCacheConfig& c) {
  if (c.groups.empty()) return InvalidArgument("KV cache config has no layer group");
  if (c.block_size < 1 || c.block_size > 256) {
    return InvalidArgument("block size must be 1..256 tokens, got " + std::to_string(c.block_size));
  }
  std::vector<int> seen;
  for (size_t g = 0; g < c.groups.size(); ++g) {
    const KvGroupSpec& s = c.groups[g];
    const std::string where = "KV group " + std::to_string(g) + ": ";
    if (s.layers.empty()) return InvalidArgument(where + "no layers");
    if (s.dtypes.size() != s.layers.size()) return InvalidArgument(where + "one dtype per layer");
    if (s.num_kv_heads < 1 || s.head_dim_k < 1) return InvalidArgument(where + "bad head shape");
    if (s.kind == KvGroupKind::kMla && (s.num_kv_heads != 1 || s.head_dim_v != 0)) {
      return InvalidArgument(where + "MLA stores one latent row (1 head, no V)");
    }
    if (s.kind != KvGroupKind::kMla && s.head_dim_v < 1) return InvalidArgument(where + "no V dim");
    if (s.windowed() && s.window < 1) return InvalidArgument(where + "window must be >= 1");
    if (s.sink_tokens < 0) return InvalidArgument(where + "negative sink tokens");
    for (int l : s.layers) {
      if (l < 0) return InvalidArgument(where + "negative layer index");
      if (std::find(seen.begin(), seen.end(), l) != seen.end()) {
        return InvalidArgument("layer " + std::to_string(l) + " is in two KV groups");
      }
      seen.push_back(l);
    }
  }
  if (c.num_blocks < 0) return InvalidArgument("negative block count");
  if (c.num_blocks == 0 && c.memory_bytes == 0) {
    return InvalidArgument("KV cache needs a memory budget or a block count");
  }
  return Status::Ok();
}

std::string CacheNamespace(const KvCacheConfig& c) {
  // Everything that changes what a block's bytes mean, besides the tokens themselves.
  std::string ns = "fp=" + c.model_fingerprint + "|B=" + std::to_string(c.block_size);
  for (const KvGroupSpec& s : c.groups) {
    ns += "|" + std::string(KvGroupKindName(s.kind)) + ":" + std::to_string(s.window) + ":" +
          std::to_string(s.sink_tokens) + ":";
    for (size_t i = 0; i < s.layers.size(); ++i) {
      ns += std::to_string(s.layers[i]) + "=" + std::string(KvDtypeName(s.dtypes[i].k)) + "/" +
            std::string(KvDtypeName(s.dtypes[i].v)) + ",";
    }
  }
  return ns;
}

int64_t CeilBlocks(int64_t tokens, int b) { return (tokens + b - 1) / b; }

}  // namespace

Result<std::unique_ptr<KvCacheManager>> KvCacheManager::Create(KvCacheConfig config) {
  KV_RETURN_IF_ERROR(ValidateConfig(config));
  PoolSizing sizing;
  if (config.num_blocks > 0) {
    sizing = SizePoolByBlocks(config.groups, config.block_size, config.num_blocks);
  } else {
    KV_ASSIGN_OR_RETURN(sizing, SizePool(config.groups, config.block_size, config.memory_bytes,
                                         config.max_model_len));
  }
  DeviceBuffer arena;
  if (config.allocate_storage) {
    DeviceAllocator* alloc = config.allocator ? config.allocator : &HostAllocator::Get();
    KV_ASSIGN_OR_RETURN(arena, AllocateBuffer(alloc, sizing.total_bytes, kSectionAlign));
  }
  return std::unique_ptr<KvCacheManager>(
      new KvCacheManager(std::move(config), std::move(sizing), std::move(arena)));
}

KvCacheManager::KvCacheManager(KvCacheConfig config, PoolSizing sizing, DeviceBuffer arena)
    : config_(std::move(config)), sizing_(std::move(sizing)), arena_(std::move(arena)) {
  cache_namespace_ = CacheNamespace(config_);
  uint64_t offset = 0;
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    const int32_t n = sizing_.num_blocks[g];
    const size_t history = config_.evicted_history ? config_.evicted_history : 4 * size_t(n);
    uint8_t* storage = arena_.data() ? arena_.data() + offset : nullptr;
    groups_.push_back(std::make_unique<KvGroup>(config_.groups[g], config_.block_size, n, storage,
                                                history));
    offset += uint64_t(n) * sizing_.bytes_per_block[g];
    const KvGroupSpec& s = config_.groups[g];
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const size_t l = static_cast<size_t>(s.layers[i]);
      if (layer_group_.size() <= l) {
        layer_group_.resize(l + 1, -1);
        layer_slot_.resize(l + 1, -1);
      }
      layer_group_[l] = static_cast<int>(g);
      layer_slot_[l] = static_cast<int>(i);
    }
  }
}

KvCacheManager::~KvCacheManager() = default;

const KvCacheManager::Sequence& KvCacheManager::Seq(SeqId seq) const {
  auto it = seqs_.find(seq);
  KV_CHECK(it != seqs_.end()) << "unknown sequence " << seq;
  return *it->second;
}

KvCacheManager::Sequence& KvCacheManager::Seq(SeqId seq) {
  auto it = seqs_.find(seq);
  KV_CHECK(it != seqs_.end()) << "unknown sequence " << seq;
  return *it->second;
}

Status KvCacheManager::AddSequence(SeqId seq, std::string_view cache_salt) {
  if (seqs_.count(seq)) return InvalidArgument("sequence " + std::to_string(seq) + " exists");
  auto s = std::make_unique<Sequence>();
  s->salt = std::string(cache_salt);
  s->root = PrefixRootHash(cache_namespace_, cache_salt);
  s->tables.resize(groups_.size());
  s->window_cursor.resize(groups_.size(), 0);
  seqs_.emplace(seq, std::move(s));
  return Status::Ok();
}

AppendResult KvCacheManager::Append(SeqId id, std::span<const int32_t> tokens) {
  AppendResult r;
  const AppendRequest req{id, tokens};
  std::vector<int32_t> need(groups_.size(), 0);
  std::vector<std::vector<int32_t>> revived(groups_.size());
  PlanOne(req, &need, &revived, &r.prefix);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int32_t available =
        groups_[g]->pool().num_available() - static_cast<int32_t>(revived[g].size());
    if (need[g] > available) return r;  // Out of blocks: nothing changed.
  }
  Sequence& s = Seq(id);
  const int b = config_.block_size;
  const int64_t n0 = static_cast<int64_t>(s.tokens.size());
  const int64_t n1 = n0 + static_cast<int64_t>(tokens.size());
  if (n0 == 0 && config_.enable_prefix_caching) {
    // Adopt the cached prefix before taking new blocks, so taking cannot evict a hit.
    const int64_t hit_blocks = r.prefix.cached_tokens / b;
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int64_t j = 0; j < hit_blocks; ++j) {
        const int32_t blk = r.prefix.blocks[g][size_t(j)];
        if (blk >= 0) groups_[g]->AddRef(blk);
      }
    }
    AdoptTierBlocks(r.prefix, &r);
    for (size_t g = 0; g < groups_.size(); ++g) {
      s.tables[g].assign(r.prefix.blocks[g].begin(), r.prefix.blocks[g].begin() + hit_blocks);
    }
    s.hashes.assign(r.prefix.block_hashes.begin(), r.prefix.block_hashes.begin() + hit_blocks);
    s.computed = r.prefix.cached_tokens;
    ++prefix_queries_;
    prefix_query_tokens_ += n1;
    prefix_hit_tokens_ += r.prefix.cached_tokens;
    tier_hit_tokens_ += r.prefix.tier_tokens;
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    KvGroup& grp = *groups_[g];
    std::vector<int32_t>& table = s.tables[g];
    if (n0 % b != 0) {
      // First write into a shared partial block: copy it (copy-on-write).
      const int32_t last = table.back();
      if (grp.pool().refcount(last) > 1) {
        const int32_t c = grp.CopyOf(last);
        KV_CHECK(c >= 0);
        grp.set_fill(c, static_cast<int>(n0 % b));
        grp.Release(last);
        table.back() = c;
        ++r.cow_copies;
        ++r.new_blocks;
      } else {
        // Held alone but still indexed (it was shared and full when this sequence truncated
        // into it): it is about to change, so it leaves the prefix index first.
        grp.Unindex(last);
      }
    }
    while (static_cast<int64_t>(table.size()) < CeilBlocks(n1, b)) {
      const int32_t blk = grp.Take();
      KV_CHECK(blk >= 0) << "plan said the append fits";
      table.push_back(blk);
      ++r.new_blocks;
    }
    for (int64_t j = std::max<int64_t>(n0, s.computed) / b; j < CeilBlocks(n1, b); ++j) {
      const int32_t blk = table[size_t(j)];
      if (blk >= 0) grp.set_fill(blk, static_cast<int>(std::min<int64_t>(n1, (j + 1) * b) - j * b));
    }
  }
  cow_copies_ += r.cow_copies;
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  r.ok = true;
  return r;
}

void KvCacheManager::AdoptTierBlocks(PrefixLookup& lookup, AppendResult* r) {
  if (lookup.tier_tokens == 0) return;
  KV_CHECK(tier_hook_ != nullptr) << "a lookup found tier blocks without a tier";
  const int64_t hit_blocks = lookup.cached_tokens / config_.block_size;
  std::vector<std::pair<int, size_t>> fills;  // (group, logical block) to fill from the tier.
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int64_t j = 0; j < hit_blocks; ++j) {
      if (lookup.blocks[g][size_t(j)] == kFromTier) fills.emplace_back(int(g), size_t(j));
    }
  }
  // Taking pool blocks below may evict cached ones into the tier; pins keep the blocks about to
  // be filled from being pushed out of it meanwhile.
  for (auto [g, j] : fills) tier_hook_->Pin(g, lookup.block_hashes[j]);
  for (auto [g, j] : fills) {
    KvGroup& grp = *groups_[size_t(g)];
    const BlockHash& hash = lookup.block_hashes[j];
    const int32_t blk = grp.Take();
    KV_CHECK(blk >= 0) << "plan said the tier blocks fit";
    if (grp.has_storage()) {
      const std::span<uint8_t> dst(grp.data(blk), grp.layout().bytes_per_block());
      KV_CHECK(tier_hook_->Fill(g, hash, dst)) << "tier lost a pinned block";
    }
    grp.set_fill(blk, config_.block_size);
    grp.Index(hash, blk);
    lookup.blocks[size_t(g)][j] = blk;
    ++r->new_blocks;
    ++r->tier_fills;
  }
  for (auto [g, j] : fills) tier_hook_->Unpin(g, lookup.block_hashes[j]);
}

void KvCacheManager::SetTierHook(KvTierHook* hook) {
  tier_hook_ = hook;
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->set_tier_hook(hook, int(g));
}

int64_t KvCacheManager::DemoteAllCached() {
  int64_t n = 0;
  for (auto& g : groups_) n += g->DemoteCached(g->pool().num_cached());
  return n;
}

Status KvCacheManager::MarkComputed(SeqId id, int64_t num_tokens) {
  Sequence& s = Seq(id);
  if (num_tokens < 0 || num_tokens > static_cast<int64_t>(s.tokens.size())) {
    return InvalidArgument("MarkComputed(" + std::to_string(num_tokens) + ") past the " +
                           std::to_string(s.tokens.size()) + " appended tokens");
  }
  if (num_tokens <= s.computed) return Status::Ok();
  s.computed = num_tokens;
  const int b = config_.block_size;
  if (config_.enable_prefix_caching) {
    // Newly completed full blocks become findable. A block whose hash another block already
    // holds stays unindexed and returns to the free list when released.
    while (static_cast<int64_t>(s.hashes.size()) < num_tokens / b) {
      const size_t j = s.hashes.size();
      const BlockHash& parent = j == 0 ? s.root : s.hashes[j - 1];
      s.hashes.push_back(ChainBlockHash(
          parent, std::span<const int32_t>(s.tokens).subspan(j * size_t(b), size_t(b))));
      for (size_t g = 0; g < groups_.size(); ++g) {
        const int32_t blk = s.tables[g][j];
        if (blk < 0 || groups_[g]->index().IsIndexed(blk)) continue;
        if (groups_[g]->Index(s.hashes[j], blk) && tier_hook_ != nullptr && groups_[g]->has_storage()) {
          tier_hook_->OnComplete(int(g), s.hashes[j],
                                 std::span<const uint8_t>(groups_[g]->data(blk),
                                                          groups_[g]->layout().bytes_per_block()));
        }
      }
    }
  }
  // Windowed groups return blocks that no later query can see.
  for (size_t g = 0; g < groups_.size(); ++g) {
    const KvGroupSpec& spec = groups_[g]->spec();
    if (!spec.windowed()) continue;
    const int64_t sink_blocks = (spec.sink_tokens + b - 1) / b;
    int64_t& j = s.window_cursor[g];
    j = std::max(j, sink_blocks);
    for (; j < static_cast<int64_t>(s.tables[g].size()) && !WindowNeeds(spec, j, num_tokens); ++j) {
      int32_t& blk = s.tables[g][size_t(j)];
      if (blk >= 0) groups_[g]->Release(blk);
      blk = -1;
    }
  }
  return Status::Ok();
}

Status KvCacheManager::Fork(SeqId src, SeqId dst) {
  const Sequence& a = Seq(src);
  if (a.computed != static_cast<int64_t>(a.tokens.size())) {
    return InvalidArgument("fork of sequence " + std::to_string(src) +
                           " before its appended tokens are computed");
  }
  if (seqs_.count(dst)) return InvalidArgument("sequence " + std::to_string(dst) + " exists");
  auto s = std::make_unique<Sequence>(a);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int32_t blk : s->tables[g]) {
      if (blk >= 0) groups_[g]->AddRef(blk);
    }
  }
  seqs_.emplace(dst, std::move(s));
  return Status::Ok();
}

Status KvCacheManager::Truncate(SeqId id, int64_t n) {
  Sequence& s = Seq(id);
  const int64_t len = static_cast<int64_t>(s.tokens.size());
  if (n < 0 || n > len) {
    return InvalidArgument("truncate to " + std::to_string(n) + " of " + std::to_string(len));
  }
  const int b = config_.block_size;
  const int64_t keep = CeilBlocks(n, b);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const KvGroupSpec& spec = groups_[g]->spec();
    if (!spec.windowed()) continue;
    for (int64_t j = 0; j < keep; ++j) {
      if (s.tables[g][size_t(j)] < 0 && WindowNeeds(spec, j, n)) {
        return OutOfRange("cannot truncate to " + std::to_string(n) +
                          " tokens: the sliding window already released block " +
                          std::to_string(j));
      }
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    KvGroup& grp = *groups_[g];
    ReleaseTable(static_cast<int>(g), &s.tables[g], static_cast<size_t>(keep));
    if (n % b != 0) {
      const int32_t last = s.tables[g].back();
      // A block only this sequence holds is rewritten in place: it leaves the prefix index and
      // its fill shrinks. A shared one stays as it is and is copied on the next append.
      if (last >= 0 && grp.pool().refcount(last) == 1) {
        grp.Unindex(last);
        grp.set_fill(last, static_cast<int>(n % b));
      }
    }
    s.window_cursor[g] = std::min(s.window_cursor[g], keep);
  }
  s.tokens.resize(size_t(n));
  s.computed = std::min(s.computed, n);
  if (static_cast<int64_t>(s.hashes.size()) > n / b) s.hashes.resize(size_t(n / b));
  return Status::Ok();
}

void KvCacheManager::Release(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  for (size_t g = 0; g < groups_.size(); ++g) {
    ReleaseTable(static_cast<int>(g), &it->second->tables[g], 0);
  }
  seqs_.erase(it);
}

void KvCacheManager::ReleaseTable(int g, std::vector<int32_t>* table, size_t from) {
  // Tail first: a sequence's last blocks become the oldest LRU entries, so leaves go first.
  for (size_t j = table->size(); j-- > from;) {
    if ((*table)[j] >= 0) groups_[size_t(g)]->Release((*table)[j]);
  }
  if (table->size() > from) table->resize(from);
}

void KvCacheManager::WriteKv(SeqId id, int layer, int64_t pos, const float* k, const float* v) {
  const Sequence& s = Seq(id);
  KV_CHECK(layer >= 0 && size_t(layer) < layer_group_.size() && layer_group_[size_t(layer)] >= 0);
  KV_CHECK(pos >= 0 && pos < static_cast<int64_t>(s.tokens.size()));
  const size_t g = size_t(layer_group_[size_t(layer)]);
  const int i = layer_slot_[size_t(layer)];
  KvGroup& grp = *groups_[g];
  const int b = config_.block_size;
  const int32_t blk = s.tables[g][size_t(pos / b)];
  KV_CHECK(blk >= 0 && grp.pool().refcount(blk) == 1 && !grp.index().IsIndexed(blk))
      << "write into a shared, cached or released block (sequence " << id << ", pos " << pos << ")";
  if (!grp.has_storage()) return;
  const BlockLayout& lay = grp.layout();
  const LayerSections& sec = lay.layer(i);
  const KvGroupSpec& spec = grp.spec();
  uint8_t* base = grp.data(blk);
  const int slot = static_cast<int>(pos % b);
  for (int h = 0; h < spec.num_kv_heads; ++h) {
    EncodeRow(sec.dtypes.k, k + size_t(h) * size_t(spec.head_dim_k), spec.head_dim_k,
              base + lay.KDataOffset(i, h, slot), base + lay.KScaleOffset(i, h, slot));
    if (spec.kind == KvGroupKind::kMla) continue;
    EncodeRow(sec.dtypes.v, v + size_t(h) * size_t(spec.head_dim_v), spec.head_dim_v,
              base + lay.VDataOffset(i, h, slot), base + lay.VScaleOffset(i, h, slot));
  }
}

void KvCacheManager::ReadKv(SeqId id, int layer, int64_t pos, float* k, float* v) const {
  const Sequence& s = Seq(id);
  KV_CHECK(layer >= 0 && size_t(layer) < layer_group_.size() && layer_group_[size_t(layer)] >= 0);
  KV_CHECK(pos >= 0 && pos < static_cast<int64_t>(s.tokens.size()));
  const size_t g = size_t(layer_group_[size_t(layer)]);
  const int i = layer_slot_[size_t(layer)];
  const KvGroup& grp = *groups_[g];
  const int b = config_.block_size;
  const int32_t blk = s.tables[g][size_t(pos / b)];
  KV_CHECK(blk >= 0 && grp.has_storage()) << "position " << pos << " holds no KV";
  const BlockLayout& lay = grp.layout();
  const LayerSections& sec = lay.layer(i);
  const KvGroupSpec& spec = grp.spec();
  const uint8_t* base = grp.data(blk);
  const int slot = static_cast<int>(pos % b);
  for (int h = 0; h < spec.num_kv_heads; ++h) {
    DecodeRow(sec.dtypes.k, base + lay.KDataOffset(i, h, slot), base + lay.KScaleOffset(i, h, slot),
              spec.head_dim_k, k + size_t(h) * size_t(spec.head_dim_k));
    if (spec.kind == KvGroupKind::kMla) continue;
    DecodeRow(sec.dtypes.v, base + lay.VDataOffset(i, h, slot), base + lay.VScaleOffset(i, h, slot),
              spec.head_dim_v, v + size_t(h) * size_t(spec.head_dim_v));
  }
}

int64_t KvCacheManager::NumTokens(SeqId seq) const {
  return static_cast<int64_t>(Seq(seq).tokens.size());
}
int64_t KvCacheManager::NumComputed(SeqId seq) const { return Seq(seq).computed; }
std::span<const int32_t> KvCacheManager::BlockTable(SeqId seq, int group) const {
  return Seq(seq).tables[size_t(group)];
}
std::span<const int32_t> KvCacheManager::Tokens(SeqId seq) const { return Seq(seq).tokens; }

}  // namespace kvengine
