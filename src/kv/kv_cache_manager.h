// KvCacheManager: the KV cache of one model — every sequence's block tables over the groups'
// pools, the prefix cache, copy-on-write forks, sliding-window release, plans and stats.
//
// Owner: the engine loop thread. Not thread-safe: HTTP and tier I/O threads reach it through
// the engine's queues (docs/architecture.md).
//
// Lifecycle of a sequence:
//   AddSequence(id, salt)           empty, holds no block
//   Append(id, tokens)              allocates slots on demand (a fresh sequence first adopts its
//                                   longest cached prefix); out of blocks is a normal result
//   WriteKv(...) for new positions  the model writes K/V rows into the slots
//   MarkComputed(id, n)             first n tokens hold KV: full blocks enter the prefix cache,
//                                   windowed groups return blocks that left the window
//   Fork / Truncate / Release
// Plan, then commit: PlanStep answers "would these appends fit, what would be evicted" without
// changing anything; Append is the commit and changes nothing when it does not fit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kvengine/status.h"
#include "kv/allocator.h"
#include "kv/kv_group.h"
#include "kv/kv_stats.h"
#include "kv/pool_sizing.h"
#include "kv/tier_hook.h"
#include "kv/block_hash.h"

namespace kvengine {

using SeqId = uint64_t;

struct KvCacheConfig {
  std::vector<KvGroupSpec> groups;  // At least one; every model layer in exactly one group.
  int block_size = 16;              // Tokens per block, 1..256.
  // Pool size: `num_blocks` blocks in every group if > 0, else `memory_bytes` split among the
  // groups by SizePool over max_model_len (pool_sizing.h).
  uint64_t memory_bytes = 0;
  int32_t num_blocks = 0;
  int64_t max_model_len = 4096;
  bool enable_prefix_caching = true;
  // Extra key of every block hash: whatever identifies the model's weights and tokenizer. The
  // manager adds the KV dtype map and the block size itself.
  std::string model_fingerprint;
  bool allocate_storage = true;          // false: metadata only (workload simulation).
  DeviceAllocator* allocator = nullptr;  // null: HostAllocator.
  size_t evicted_history = 0;            // Evicted hashes remembered for miss reasons; 0: 4x blocks.
};

// Why prompt tokens did or did not come from the cache.
struct PrefixLookup {
  int64_t cached_tokens = 0;          // Served from cache (a multiple of block_size).
  int64_t miss_never_cached = 0;      // Full blocks the cache has not seen (recently).
  int64_t miss_evicted = 0;           // Full blocks that were cached and evicted earlier.
  int64_t miss_partial = 0;           // The tail that must be computed: the partial last block,
                                      // or the last full block when all was cached (one token
                                      // must run to produce logits).
  int64_t tier_tokens = 0;            // Of cached_tokens: blocks a tier (RAM) fills.
  // [group][logical block]: pool hits; -1 = not needed; kFromTier = filled from a tier.
  std::vector<std::vector<int32_t>> blocks;
  std::vector<BlockHash> block_hashes;       // Chained hashes of every full block of the prompt.
};

inline constexpr int32_t kFromTier = -2;

struct AppendRequest {
  SeqId seq = 0;
  std::span<const int32_t> tokens;
};

struct StepPlan {
  bool fits = false;             // All requests fit together.
  int num_fitting = 0;           // Leading requests that fit, in order.
  std::vector<int32_t> new_blocks;     // [group] blocks to take (new + copy-on-write).
  std::vector<int32_t> revived_blocks;  // [group] cached blocks with no holder that fresh
                                        // sequences would adopt (they leave `available` too).
  std::vector<int32_t> available;      // [group] free + evictable blocks before the step.
  std::vector<std::vector<int32_t>> evicted;  // [group] cached blocks the step would evict.
  std::vector<int64_t> cached_tokens;  // [request] prefix hits fresh sequences would adopt.
};

struct AppendResult {
  bool ok = false;            // false: not enough blocks; nothing changed.
  PrefixLookup prefix;        // Fresh sequences: what the prefix cache served.
  int32_t new_blocks = 0;     // Blocks taken, all groups (copies included).
  int32_t cow_copies = 0;
  int32_t tier_fills = 0;     // Blocks of the adopted prefix copied in from a tier.
};

class KvCacheManager {
 public:
  static Result<std::unique_ptr<KvCacheManager>> Create(KvCacheConfig config);
  ~KvCacheManager();
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  Status AddSequence(SeqId seq, std::string_view cache_salt = {});
  bool HasSequence(SeqId seq) const { return seqs_.count(seq) != 0; }

  // Longest cached prefix of `tokens` under `cache_salt`, at most `max_tokens` (rounded down to
  // a block). Does not change anything.
  PrefixLookup LookupPrefix(std::span<const int32_t> tokens, std::string_view cache_salt,
                            int64_t max_tokens) const;

  StepPlan PlanStep(std::span<const AppendRequest> requests) const;
  // Appends `tokens` to `seq`. A fresh (empty) sequence first adopts its longest cached prefix,
  // leaving at least one token to compute.
  AppendResult Append(SeqId seq, std::span<const int32_t> tokens);
  // The first `num_tokens` positions of `seq` hold their KV.
  Status MarkComputed(SeqId seq, int64_t num_tokens);
  // `dst` (new) shares all of `src`'s blocks; the first write into a shared partial block copies it.
  Status Fork(SeqId src, SeqId dst);
  // Keeps the first `num_tokens` tokens.
  Status Truncate(SeqId seq, int64_t num_tokens);
  void Release(SeqId seq);

  // K/V rows of one token. k: [num_kv_heads][head_dim_k]; v: [num_kv_heads][head_dim_v] (unused
  // for MLA). `pos` must have a slot (Append) in a block this sequence holds alone.
  void WriteKv(SeqId seq, int layer, int64_t pos, const float* k, const float* v);
  void ReadKv(SeqId seq, int layer, int64_t pos, float* k, float* v) const;

  int64_t NumTokens(SeqId seq) const;
  int64_t NumComputed(SeqId seq) const;
  // Physical block ids of `seq` in group g; -1 where a windowed group released the block.
  std::span<const int32_t> BlockTable(SeqId seq, int group) const;
  std::span<const int32_t> Tokens(SeqId seq) const;

  int num_groups() const { return static_cast<int>(groups_.size()); }
  // Group holding model layer `layer` and the layer's index inside it; -1 if none.
  int GroupOfLayer(int layer) const {
    return layer >= 0 && size_t(layer) < layer_group_.size() ? layer_group_[size_t(layer)] : -1;
  }
  int SlotOfLayer(int layer) const { return layer_slot_[size_t(layer)]; }
  const KvGroup& group(int g) const { return *groups_[static_cast<size_t>(g)]; }
  int block_size() const { return config_.block_size; }
  const KvCacheConfig& config() const { return config_; }
  // Fingerprint | dtype map | block size: what the block hashes are keyed by.
  const std::string& cache_namespace() const { return cache_namespace_; }
  int64_t tier_hit_tokens() const { return tier_hit_tokens_; }
  const PoolSizing& sizing() const { return sizing_; }
  KvStats Stats() const;

  // Offload tiers below the pool (kv/tier_hook.h); null detaches. Not owned; must outlive the
  // manager or be detached first.
  void SetTierHook(KvTierHook* hook);
  // Evicts every cached (unreferenced, indexed) block through the tier hook; returns how many.
  int64_t DemoteAllCached();

 private:
  struct Sequence;
  KvCacheManager(KvCacheConfig config, PoolSizing sizing, DeviceBuffer arena);

  const Sequence& Seq(SeqId seq) const;
  Sequence& Seq(SeqId seq);
  // Chained hashes of the full blocks of `tokens`, starting from `root`.
  std::vector<BlockHash> HashBlocks(const BlockHash& root, std::span<const int32_t> tokens) const;
  // Blocks a windowed group must hold once `computed` tokens are done (logical index j).
  bool WindowNeeds(const KvGroupSpec& spec, int64_t j, int64_t computed) const;
  // Per-group blocks `req` would take, and the cached blocks it would revive.
  // new_blocks[g] += blocks to take; revived[g] gets hit blocks that are now unreferenced.
  void PlanOne(const AppendRequest& req, std::vector<int32_t>* new_blocks,
               std::vector<std::vector<int32_t>>* revived, PrefixLookup* lookup) const;
  // Takes and fills pool blocks for the lookup's tier hits (kFromTier -> block ids).
  void AdoptTierBlocks(PrefixLookup& lookup, AppendResult* r);
  void ReleaseTable(int g, std::vector<int32_t>* table, size_t from);

  KvCacheConfig config_;
  PoolSizing sizing_;
  DeviceBuffer arena_;  // Storage of all groups' blocks, group after group.
  std::vector<std::unique_ptr<KvGroup>> groups_;
  std::vector<int> layer_group_;  // [model layer] -> group, -1 if no group holds it.
  std::vector<int> layer_slot_;   // [model layer] -> index of the layer inside its group.
  std::string cache_namespace_;   // Fingerprint | dtype map | block size.
  std::unordered_map<SeqId, std::unique_ptr<Sequence>> seqs_;
  int64_t prefix_queries_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t cow_copies_ = 0;
  int64_t tier_hit_tokens_ = 0;
  KvTierHook* tier_hook_ = nullptr;
};

}  // namespace kvengine
