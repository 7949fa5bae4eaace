#include "kv/kv_cache_manager.h"
#include "kv/kv_sequence.h"

namespace kvengine {

KvStats KvCacheManager::Stats() const {
  KvStats st;
  st.block_size = config_.block_size;
  st.num_sequences = static_cast<int64_t>(seqs_.size());
  st.prefix_queries = prefix_queries_;
  st.prefix_query_tokens = prefix_query_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  st.prefix_tier_hit_tokens = tier_hit_tokens_;
  st.cow_copies = cow_copies_;
  st.pool_bytes = sizing_.total_bytes;
  for (const auto& grp : groups_) {
    const BlockPool& pool = grp->pool();
    KvGroupStats gs;
    gs.capacity_blocks = pool.num_blocks();
    gs.free_blocks = pool.num_free();
    gs.cached_blocks = pool.num_cached();
    gs.used_blocks = pool.num_used();
    gs.shared_blocks = pool.num_shared();
    gs.bytes_per_block = grp->layout().bytes_per_block();
    gs.evictions = grp->evictions();
    for (int32_t b = 0; b < pool.num_blocks(); ++b) {
      if (pool.state(b) == BlockState::kUsed) gs.tokens_stored += grp->fill(b);
    }
    gs.slots_allocated = int64_t(gs.used_blocks) * config_.block_size;
    st.tokens_stored += gs.tokens_stored;
    st.slots_allocated += gs.slots_allocated;
    st.used_bytes += uint64_t(gs.used_blocks) * gs.bytes_per_block;
    for (size_t d = 0; d < kNumKvDtypes; ++d) {
      st.used_bytes_by_dtype[d] += uint64_t(gs.used_blocks) * grp->layout().bytes_by_dtype()[d];
    }
    st.used_padding_bytes += uint64_t(gs.used_blocks) * grp->layout().padding_bytes();
    st.groups.push_back(gs);
  }
  st.empty_slots = st.slots_allocated - st.tokens_stored;
  return st;
}

}  // namespace kvengine
