// Internal: int8 K and V through int16 dot products, the steps that attention_hwy.cc's item
// kernel runs in place of its float steps 1 and 3 where they apply (Int8Int16Applies) and the
// CPU has an implementation; the online softmax (step 2) stays in float. Three implementations of
// one specification, each giving the same bits:
//   * AVX-512 VNNI (attention_vnni.cc): vpdpwssd, 32 int16 products summed pairwise into 16 int32
//     lanes per instruction;
//   * AVX2 (attention_int16_avx2.cc): vpmaddwd + vpaddd, the same sums 8 lanes at a time, for
//     CPUs without VNNI (Zen 3, Haswell .. Skylake-client): the float steps spend two conversions
//     and four multiply-adds per 8 elements where these spend half an instruction of each kind;
//   * scalar (attention_int16_ref.cc): the specification, which tests hold the others to bit for
//     bit on random data.
//
// Quantization, per work item / chunk and never per batch (the batch-invariance contract):
//   q:  per query head, q16 = round(q * inv) (to nearest, ties even; saturated to int16),
//       inv = 32767 / amax(q) (0 if amax is 0 or not finite), q_scale = amax / 32767 (relative
//       error <= 1.5e-5 of amax);
//       score_t = (float(sum_d q16[d] * k_code_t[d]) * q_scale) * k_scale_t (exact int32 sum).
//   V:  per chunk and head, w_t = p_t * v_scale_t (0 past n), S = max_t w_t / 32767, W_t =
//       round(w_t * inv) with inv = 32767 / max_t w_t (0 if the max is 0), saturated to int16;
//       acc = fma(float(sum_t W_t * v_code_t), S, acc * alpha) (exact int32 sum; |sum| <=
//       kAttentionChunk * 127 * 32767, 64 * 127 * 32767 < 2^31).
// The accumulators are held in the order of Int8Int16Element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/attention_kernel.h"

namespace kvengine {

// Whether the int16 steps handle `kv`: K and V int8 with f16 row scales, head dims multiples of
// 32, head_dim_k <= 512 (so a score's int32 sum, <= dk * 127 * 32767, cannot overflow).
bool Int8Int16Applies(const KvLayerView& kv);

// The row element held at accumulator index i: within each run of 32, indices [0, 16) hold
// elements {0-3, 8-11, 16-19, 24-27} and [16, 32) hold {4-7, 12-15, ...} (the int16 pair
// interleave of two V rows works within 128-bit lanes).
inline size_t Int8Int16Element(size_t i) {
  const size_t base = i / 32 * 32, r = i % 32, q = r % 16;
  return base + 8 * (q / 4) + (r >= 16 ? 4 : 0) + q % 4;
}

// One implementation of the steps.
struct Int8Int16Steps {
  const char* name = "";  // "vnni", "avx2", "scalar"
  // q16[0, d) and *scale for one query head, d a multiple of 32; all-zero q gives zeros, scale 0.
  void (*quantize_query)(const float* q, size_t d, int16_t* q16, float* scale) = nullptr;
  // scores[h][t] = score_t of head h for h < heads <= 4, t < n <= kAttentionChunk (rows padded to
  // a multiple of kAttentionPosTile by repeating row n - 1; scores past n are unspecified);
  // run_starts: the rows' runs (ItemRowWalker::Next: rows of one run have adjacent scales); q16:
  // [heads][d]; scores: [heads][kAttentionChunk]. Prefetches pf's rows along the way (speed only).
  void (*scores)(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                 const float* q_scale, int heads, size_t d, float* scores,
                 const KvPrefetch& pf) = nullptr;
  // acc[h] = fma(V sums, S_h, acc[h] * alpha[h]) for h < heads <= 4 over rows t < n (above); p:
  // [heads][kAttentionChunk] (only t < n read); acc: [heads][acc_stride], Int8Int16Element order.
  void (*accumulate)(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                     const float* alpha, int heads, size_t d, float* acc,
                     size_t acc_stride) = nullptr;
};

// f.template operator()<H>() with H = heads for 1 <= heads <= 4 (4 for more): the
// implementations' step templates take the head count as a constant.
template <class F>
void ForHeads(int heads, const F& f) {
  switch (heads) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    default:
      return f.template operator()<4>();
  }
}

// The AVX-512 VNNI steps, or nullptr where the CPU lacks AVX512F/BW/VL, AVX512_VNNI, F16C or FMA.
const Int8Int16Steps* Int8StepsAvx512Vnni();
// The AVX2 steps, or nullptr where the CPU lacks AVX2, F16C or FMA.
const Int8Int16Steps* Int8StepsAvx2();
// The scalar specification (any CPU).
const Int8Int16Steps& Int8StepsScalar();

}  // namespace kvengine
