// Internal: int8 K and V through int16 dot products (LowPrecisionSteps, attention_steps.h), where
// they apply (Int8Int16Applies) and the CPU has an implementation. Three implementations of
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
#include <cstring>

#include "kernels/attention/attention_steps.h"

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

// The pair (w[2t], w[2t+1]) of an int16 weight row as one int32 (little endian: w[2t] low): the
// operand that vpdpwssd / vpmaddwd multiply with two V rows' interleaved codes. Read from the int16
// row itself: copying the row into an int32 array right after its vector stores made the copy's
// loads wait on a failed store-to-load forward (11% of the VNNI value step's samples on Zen 4).
inline int32_t WeightPair(const int16_t* w, int t) {
  int32_t v;
  std::memcpy(&v, w + 2 * t, sizeof v);
  return v;
}

// The AVX-512 VNNI steps, or nullptr where the CPU lacks AVX512F/BW/VL, AVX512_VNNI, F16C or FMA.
const LowPrecisionSteps* Int8StepsAvx512Vnni();
// The AVX2 steps, or nullptr where the CPU lacks AVX2, F16C or FMA.
const LowPrecisionSteps* Int8StepsAvx2();
// The scalar specification (any CPU).
const LowPrecisionSteps& Int8StepsScalar();

}  // namespace kvengine
