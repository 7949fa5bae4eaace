// Internal: int4 K scores through int8 dot products (LowPrecisionSteps, attention_steps.h, with
// scores only: V keeps the float value step), where they apply (Int4Int8Applies) and the CPU has
// AVX-512 VNNI. Two implementations of one specification, giving the same bits:
//   * AVX-512 VNNI (attention_int4_vnni.cc): vpdpbusd multiplies 64 unsigned codes by 64 int8 q
//     elements into 16 int32 lanes per instruction; a d = 128 row takes 2 instructions per query
//     head where the float steps spend 8 multiply-adds and a decode of 16 instructions per 4 heads
//     (attention_rows-inl.h, Int4Row);
//   * scalar (attention_int4_ref.cc): the specification, which tests hold the SIMD version to bit
//     for bit on random data.
//
// Arithmetic, per work item and never per batch (the batch-invariance contract):
//   q:  per query head, q8 = round(q * inv) (to nearest, ties even), inv = 127 / amax(q) (0 if
//       amax is 0), q_scale = amax / 127; Qs_g = sum of q8 over group g (exact). A q with an
//       infinity or NaN gets q8 = 0 and q_scale = NaN (its scores are NaN, as in the float steps).
//   K:  row t, group g (32 elements): code c in [0, 15], f16 scale s_tg and min m_tg (codec.h);
//       I_tg = sum over the group of q8[i] * c_t[i] (exact int32);
//       F_even, F_odd = 0; for g = 0, 1, .. in turn, F_(g % 2) = fma(m_tg, Qs_g,
//       fma(float(I_tg), s_tg, F_(g % 2)));
//       score_t = (F_even + F_odd) * q_scale.
// So q carries a rounding of at most half a step of amax / 127 per element, against int4's own
// half step of (group max - group min) / 15 per K element: the q rounding moves a score by about a
// tenth of what int4 K itself does (measured:
// AttentionKernelTest.Int8StepsCostLittleNextToInt4Itself and, on a model,
// ArchitectureE2eTest.Int8ScoresMoveLogitsLittleNextToInt4Itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "attention/attention_steps.h"

namespace kvengine {

// Whether the int4 score steps handle `kv`: K int4 in groups of 32 (4 scale bytes each) with
// head_dim_k a multiple of 64 and at most 512. V may be any dtype (the float value step).
bool Int4Int8Applies(const KvLayerView& kv);

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

// The AVX-512 VNNI steps, or nullptr where the CPU lacks AVX512F/BW/VL, AVX512_VNNI, F16C or FMA.
const LowPrecisionSteps* Int4StepsAvx512Vnni();
// The scalar specification (any CPU).
const LowPrecisionSteps& Int4StepsScalar();

}  // namespace kvengine
