// Internal: the int8-KV steps of the item kernel with AVX-512 VNNI int16 dot products
// (vpdpwssd: 32 int16 x int16 products summed pairwise into 16 int32 lanes per instruction).
// attention_hwy.cc's AVX3 driver calls them in place of its float steps 1 and 3 when the CPU has
// AVX512_VNNI and Int8VnniApplies(kv); the online softmax (step 2) stays in float.
//
// Quantization, per work item / chunk and never per batch (the batch-invariance contract):
//   q:  per query head, q16 = round(q / sq), sq = amax(q) / 32767 (relative error <= 1.5e-5 of
//       amax); score = sq * k_scale_t * sum_d q16[d] * k_code_t[d] (exact int32 sum).
//   V:  per chunk and head, w_t = p_t * v_scale_t, W_t = round(w_t / S), S = max_t w_t / 32767;
//       acc += S * sum_t W_t * v_code_t (exact int32 sum; |sum| <= kAttentionChunk * 127 * 32767,
//       64 * 127 * 32767 < 2^31).
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/attention_kernel.h"

namespace kvengine {

// Whether this CPU runs the functions below (AVX512F/BW/VL and AVX512_VNNI).
bool CpuHasAvx512Vnni();

// Whether the VNNI steps handle `kv`: K and V int8 with f16 row scales, head dims multiples of 32,
// head_dim_k <= 512 (so a score's int32 sum, <= dk * 127 * 32767, cannot overflow).
bool Int8VnniApplies(const KvLayerView& kv);

// q16[0, d) and *scale for one query head (see above), d a multiple of 16; all-zero q gives
// zeros and scale 0.
void QuantizeQueryInt16(const float* q, size_t d, int16_t* q16, float* scale);

// scores[h][t] = q_scale[h] * (q16_h . k_t) for h < heads <= 4, t < n <= kAttentionChunk (rows
// padded to a multiple of kAttentionPosTile by repeating row n - 1); run_starts: the rows' runs
// (ItemRowWalker::Next: 16 rows in one run have adjacent scales, loaded as one vector);
// q16: [heads][d]; scores: [heads][kAttentionChunk]. Prefetches pf's rows along the way.
void Int8ScoresVnni(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                    const float* q_scale, int heads, size_t d, float* scores, const KvPrefetch& pf);

// acc[h] = acc[h] * alpha[h] + sum_t p[h][t] * v_t for h < heads <= 4, t < n; p:
// [heads][kAttentionChunk]; acc: [heads][acc_stride] in the VNNI order (Int8VnniElement).
void Int8AccumulateVnni(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                        const float* alpha, int heads, size_t d, float* acc, size_t acc_stride);

// The row element held at acc index i of Int8AccumulateVnni's accumulators: within each run of
// 32, indices [0, 16) hold elements {0-3, 8-11, 16-19, 24-27} and [16, 32) hold {4-7, 12-15, ...}
// (the int16 pair interleave works within 128-bit lanes).
inline size_t Int8VnniElement(size_t i) {
  const size_t base = i / 32 * 32, r = i % 32, q = r % 16;
  return base + 8 * (q / 4) + (r >= 16 ? 4 : 0) + q % 4;
}

}  // namespace kvengine
