// Attention that reads K and V in place from paged KV blocks, for every KV dtype: no per-step
// gather into a contiguous copy. One call computes every query head of one token.
//
// Batch invariance: a token's output depends only on its query, its position and the KV rows it
// can see, visited in ascending position order with a fixed reduction order — not on what else is
// in the batch, how the prompt was chunked, or whether its prefix came from the prefix cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "quant/kv_dtype.h"

namespace kvengine {

// Where one layer's K and V rows live inside its group's blocks (see kv/block_layout.h):
// row (head h, slot s) of block b starts at
//   pool + b * bytes_per_block + k_data + (h * block_size + s) * k_row_bytes   (K data)
//   pool + b * bytes_per_block + k_scale + (h * block_size + s) * k_scale_bytes (K scales)
// and likewise for V.
struct KvLayerView {
  const uint8_t* pool = nullptr;
  size_t bytes_per_block = 0;
  int block_size = 0;
  int num_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  KvDtype k_dtype = KvDtype::kF32;
  KvDtype v_dtype = KvDtype::kF32;
  size_t k_data = 0, k_scale = 0, v_data = 0, v_scale = 0;
  size_t k_row_bytes = 0, k_scale_bytes = 0, v_row_bytes = 0, v_scale_bytes = 0;
  int window = 0;       // > 0: a query at p sees positions > p - window (itself included) ...
  int sink_tokens = 0;  // ... and the first sink_tokens positions.
};

// Positions [lo, pos] plus sinks [0, min(sink_tokens, lo)) that the query at `pos` attends to.
struct VisibleRange {
  int64_t sinks = 0;  // Positions 0 .. sinks-1.
  int64_t lo = 0;     // Then lo .. pos.
  int64_t count(int64_t pos) const { return sinks + (pos - lo + 1); }
};
VisibleRange VisiblePositions(const KvLayerView& kv, int64_t pos);

// q: [n_heads][head_dim_k]; out: [n_heads][head_dim_v]. Query head h reads KV head
// h / (n_heads / num_kv_heads) (GQA/MQA without duplicating K/V). Scores are q.k * scale.
// Every visible position must be in a block the table holds (KV_CHECK). Same code path and bits
// as a one-query PagedAttentionBatch without a pool.
//
// How it runs (attention_kernel.h, paged_attention.cc): one fused single pass per (query, run of
// KV heads, partition of 2048 positions), the item's KV heads taken in turn per chunk of 64
// positions: each K and V row is read once for all query heads of its KV head, dequantized in
// registers, with an online softmax per chunk (int8 KV on AVX2 and AVX-512 CPUs: int16 dot
// products, attention_int16.h); the partitions' partial softmax states are merged in ascending
// order.
void PagedAttention(const KvLayerView& kv, std::span<const int32_t> block_table, const float* q,
                    int n_heads, int64_t pos, float scale, float* out);

// One token's query against one layer's KV (see PagedAttentionBatch).
struct AttentionQuery {
  std::span<const int32_t> block_table;  // The token's sequence's table for the layer's group.
  const float* q = nullptr;              // [n_heads][head_dim_k]
  int64_t pos = 0;                       // The token's position; it attends to VisiblePositions.
  float* out = nullptr;                  // [n_heads][head_dim_v]; written, never read.
};

// Every query of a batch against the same layer, split over `pool` (nullptr: the caller alone).
// Each query's output equals what PagedAttention computes for it, bit for bit, whatever the
// batch, the thread count or the split: a token's result depends on its own query, position and
// visible KV only (batch invariance). A layer view whose block_size is the whole context and whose
// table has one entry is a contiguous per-head layout; it is valid input too.
void PagedAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                         int n_heads, float scale, ThreadPool* pool);

// The plain reference: K [T][num_kv_heads][head_dim_k] and V [T][num_kv_heads][head_dim_v] in
// contiguous f32, same visibility rules (window, sinks from `kv`). Double-precision softmax and
// sums: the yardstick the paged path is tested against.
void ContiguousAttentionRef(const KvLayerView& shape, const float* k, const float* v,
                            const float* q, int n_heads, int64_t pos, float scale, float* out);

}  // namespace kvengine
