// Internal: fp8 K and V through bf16 dot products (LowPrecisionSteps, attention_steps.h), where
// they apply (Fp8Bf16Applies) and the CPU has AVX-512 BF16 and VBMI (AMD Zen 4 and later, Intel
// Sapphire Rapids and later). Two implementations of one arithmetic:
//   * AVX-512 BF16 (attention_bf16.cc): each fp8 code is looked up in 128-entry byte tables
//     (vpermi2b, sign ORed in) that give its bf16 bits, and vdpbf16ps multiplies 32 bf16 pairs
//     into 16 f32 lanes per instruction: twice the multiply-adds of an f32 FMA per instruction
//     (measured 116 against 58 G/s on one Zen 4 core), and 6 instructions decode 64 codes where
//     the f32 steps spend 7 per 16 (attention_rows-inl.h, DecodeFp8Unscaled);
//   * scalar (attention_bf16_ref.cc): the specification, in double; tests hold the SIMD steps
//     to it within a few f32 roundings of the sums' magnitudes (their order of addition differs).
//
// Arithmetic, per work item / chunk and never per batch (the batch-invariance contract):
//   K, V: every fp8 code's value is a bf16 exactly (e4m3: 4 significant bits in 2^-9 .. 448, NaN;
//         e5m2: 3 bits in 2^-16 .. 57344, inf, NaN), always a normal one.
//   q:    per query head, q_b[d] = Bf16(q[d]) (Bf16 below);
//         score_t = (sum_d q_b[d] * k_t[d]) * k_scale_t (the products are exact in f32).
//   V:    per chunk and head, w_t = Bf16(p_t * v_scale_t) (0 past n);
//         acc = acc * alpha + sum_t w_t * v_t (v_t: the codes' values);
//         l += sum_t (w_t / v_scale_t - p_t) over rows of nonzero scale: the softmax's sum counts
//         the weights the sums carried, so acc / l stays a convex combination of V rows. (Without
//         it a rounding shared by all of a row's elements scaled the output: at position 0, w_0 =
//         Bf16(v_scale_0) scaled all of v_0 by up to 2^-9, which 4 layers of a d = 64 model turned
//         into logit errors half the size of e5m2's own.)
// So q and the folded softmax weights carry a relative rounding of at most 2^-9 (FlashAttention
// rounds P to bf16 or f16 the same way on GPUs), against 2^-4 (e4m3) or 2^-3 (e5m2) for the KV
// codes themselves. Measured on a 4-layer d = 64 model, runtime/architecture_e2e_test.cc,
//   Bf16AttentionStepsMoveLogitsLittleNextToFp8Itself:
// the logits move by 0.012 (e4m3) and 0.021 (e5m2) where fp8's own error is 0.063 and 0.14. q
// rounded to two bf16s (hi + lo) would move them by 0.011 and 0.020 and cost 20% of the speed:
// not done. The f32 steps (the plain kernels) keep q and p in f32.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "kernels/attention/attention_steps.h"
#include "quant/kv_dtype.h"

namespace kvengine {

// Whether the bf16 steps handle `kv`: K and V both fp8 of one format with f16 row scales, head
// dims multiples of 64 and at most 512.
bool Fp8Bf16Applies(const KvLayerView& kv);

// The row element held at accumulator index i: within each run of 64, vector k = i % 64 / 16
// holds, in lanes 4L .. 4L + 3, elements 16L + 4k .. 16L + 4k + 3 (vpunpck{l,h}bw of two V rows'
// codes and then of their bf16 bytes work within 128-bit lanes).
inline size_t Fp8Bf16Element(size_t i) {
  const size_t r = i % 64, lane = r % 16;
  return i - r + 16 * (lane / 4) + 4 * (r / 16) + lane % 4;
}

// f32 -> bf16 bits as vcvtne2ps2bf16 rounds: to nearest, ties to even; subnormal inputs give a
// zero of their sign; NaN gives a quiet NaN of its sign.
inline uint16_t Bf16(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  if ((b & 0x7F800000u) == 0) b &= 0x80000000u;  // Zeros and subnormals.
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((b >> 16) | 0x0040u);
  return uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

inline float Bf16ToF32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// The row element of q16[i] (Fp8Bf16QuantizeQuery): within each run of 64, i % 64 / 32 = w and
// lane L = i % 32 / 8 hold elements 16L + 8w .. 16L + 8w + 7 (a K row's 64 codes become two bf16
// vectors by vpunpck{l,h}bw of their table bytes, within 128-bit lanes).
inline size_t Fp8Bf16KElement(size_t i) {
  const size_t r = i % 64;
  return i - r + 16 * (r % 32 / 8) + 8 * (r / 32) + r % 8;
}

// The steps' query encoding (both implementations): q16[i] = Bf16(q[Fp8Bf16KElement(i)]) as
// bits, i < d (a multiple of 64); *scale = 1.
void Fp8Bf16QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale);

// The AVX-512 BF16 steps for fp8 KV of `dtype` (kFp8E4M3, kFp8E5M2), or nullptr where the CPU
// lacks AVX512F/BW/VL, AVX512_BF16, AVX512_VBMI, F16C or FMA.
const LowPrecisionSteps* Fp8StepsAvx512Bf16(KvDtype dtype);
// The scalar specification (any CPU).
const LowPrecisionSteps& Fp8Bf16StepsScalar(KvDtype dtype);

}  // namespace kvengine
