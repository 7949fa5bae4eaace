// Internal: int4 K and V through integer dot products (LowPrecisionSteps, attention_steps.h),
// where they apply and the CPU has AVX-512 VNNI: K's scores through int8 dot products
// (Int4Int8Applies), and V, where it is int4 too (Int4Int8ValuesApply), through int16 ones;
// otherwise V keeps the float value step. Two implementations of one specification:
//   * AVX-512 VNNI (attention_int4_vnni.cc): vpdpbusd multiplies 64 unsigned K codes by 64 int8 q
//     elements into 16 int32 lanes per instruction (a d = 128 row: 2 instructions per query head,
//     where the float steps spend 8 multiply-adds and a share of the decode); vpdpwssd multiplies
//     32 pairs of V codes by int16 weights;
//   * scalar (attention_int4_ref.cc): the specification. Tests hold the SIMD scores to it bit for
//     bit, and the SIMD values within the rounding of f32 sums (their order of addition differs).
//
// Arithmetic, per work item / chunk and never per batch (the batch-invariance contract). Rows: in
// group g (32 elements) of row t, code c in [0, 15], f16 scale s_tg and min m_tg (codec.h).
//   q:  per query head, q8 = round(q * inv) (to nearest, ties even), inv = 127 / amax(q) (0 if
//       amax is 0), q_scale = amax / 127; Qs_g = sum of q8 over group g (exact). A q with an
//       infinity or NaN gets q8 = 0 and q_scale = NaN (its scores are NaN, as in the float steps).
//   K:  I_tg = sum over the group of q8[i] * c_t[i] (exact int32);
//       F_even, F_odd = 0; for g = 0, 1, .. in turn, F_(g % 2) = fma(m_tg, Qs_g,
//       fma(float(I_tg), s_tg, F_(g % 2)));
//       score_t = (F_even + F_odd) * q_scale.
//   V:  per chunk, head and group g: w_tg = p_t * s_tg (0 past n), wmax = max_t w_tg,
//       S_g = wmax / 32767, W_tg = round(w_tg * inv) (to nearest, ties even) with
//       inv = 32767 / wmax (0 if wmax is 0); M_g = sum_t p_t * m_tg;
//       acc[e] = acc[e] * alpha + (float(sum_t W_tg * c_t[e]) * S_g + M_g) for e in group g
//       (exact int32 sums: 64 * 32767 * 15 < 2^31).
// So q carries a rounding of at most half a step of amax / 127 per element, against int4's own
// half step of (group max - group min) / 15 per K element: the q rounding moves a score by about a
// tenth of what int4 K itself does (measured:
// AttentionKernelTest.Int8StepsCostLittleNextToInt4Itself and, on a model,
// ArchitectureE2eTest.Int8ScoresMoveLogitsLittleNextToInt4Itself). The weights carry at most half a
// step of their group's largest / 32767, as int8 V's (attention_int16.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/attention/attention_steps.h"

namespace kvengine {

// Whether the int4 score steps handle `kv`: K int4 in groups of 32 (4 scale bytes each) with
// head_dim_k a multiple of 64 and at most 512. V may be any dtype (the float value step) ...
bool Int4Int8Applies(const KvLayerView& kv);
// ... and whether they handle its V too: int4 in groups of 32, head_dim_v 64, 128 or 256 (a power
// of two number of groups, 2-8, tiles a vector; a chunk's weight table stays within 8 KiB).
bool Int4Int8ValuesApply(const KvLayerView& kv);

// The row element held at value accumulator index i: within each piece of 64 (j = i / 64),
// r = i % 64 holds element 32 L + 16 P + 4 u + m, where P = r / 32, m = 2 (r % 32 / 16) +
// r % 16 / 8, L = r % 8 / 4, u = r % 4 (vpunpck{l,h}wd of two rows' code words, each word's four
// nibbles shifted out in turn, within 128-bit lanes).
inline size_t Int4Int8Element(size_t i) {
  const size_t r = i % 64, m = 2 * (r % 32 / 16) + r % 16 / 8;
  return i - r + 32 * (r % 8 / 4) + 16 * (r / 32) + 4 * (r % 4) + m;
}

// The steps' query encoding (both implementations), in the int16 buffer of d elements (2d bytes)
// that LowPrecisionSteps::quantize_query fills:
//   bytes [0, d): q8 by pieces of 64 elements: piece j's 32 even elements 64j + 2b (b < 32), then
//                 its 32 odd ones 64j + 2b + 1 (the low and high nibbles of a K row's 32 bytes);
//   bytes [d, d + 4 * d / 32): Qs_g as float, g < d / 32.
// *scale = q_scale. d is a multiple of 64.
void Int4Int8QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale);

// The q8 element at byte i of the encoding (i < d).
inline size_t Int4Int8QElement(size_t i) {
  const size_t r = i % 64;
  return i - r + 2 * (r % 32) + r / 32;
}

// Qs_g of an encoded query of d elements.
inline float Int4Int8QuerySum(const int16_t* q16, size_t d, size_t g) {
  float s;
  std::memcpy(&s, reinterpret_cast<const uint8_t*>(q16) + d + 4 * g, sizeof s);
  return s;
}

// The AVX-512 VNNI steps (with the value step: `values`), or nullptr where the CPU lacks
// AVX512F/BW/VL, AVX512_VNNI, F16C or FMA.
const LowPrecisionSteps* Int4StepsAvx512Vnni(bool values);
// The scalar specification (any CPU).
const LowPrecisionSteps& Int4StepsScalar(bool values);

}  // namespace kvengine
