// Attention with soft-capped scores (gemma2's attn_logit_softcapping) over paged KV: each score
// s = scale * q.k becomes cap * tanh(s / cap) before the softmax.
//
// The fused kernels of attention/ have no soft-cap step, so soft-capped layers run this plain
// path instead: rows are decoded with the codecs' DecodeRow (bit-identical to what the fused
// kernels see), scores and sums in double, one softmax over the visible positions in ascending
// order. It reads the same blocks in place and honours the same visibility (window, sinks) as
// PagedAttentionBatch, and is batch-invariant: a query's output depends only on its own query,
// position and visible rows, whatever the batch or thread split. It is O(positions) per query
// with no SIMD in the softmax: fine for the synthetic models and short contexts, the first
// thing to move into the fused kernel when a real gemma2 must decode fast (docs/runtime.md).
#pragma once

#include <span>

#include "kernels/attention/paged_attention.h"
#include "base/thread_pool.h"

namespace kvengine {

// As PagedAttentionBatch (same arguments and layouts), with scores soft-capped at cap > 0.
void SoftCappedAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                              int n_heads, float scale, float cap, ThreadPool* pool);

}  // namespace kvengine
