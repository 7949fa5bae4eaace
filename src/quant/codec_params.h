// Internal to src/quant: the per-row and per-group scale parameters, shared by the scalar reference
// (codec_ref.cc) and the SIMD codecs (codec_hwy.cc). Both compute the reductions (amax, min, max)
// themselves, which are exact, then call these functions, so both store bit-identical scales and
// quantize with bit-identical reciprocals.
//
// Scale policy (all scales are stored as f16, and quantization uses the stored f16 value, which is
// exactly what the decoder multiplies by):
//   * Reductions only look at finite elements; NaN and +-inf do not move the scale.
//   * Symmetric (fp8, int8): scale = amax / qmax rounded UP to an f16, so the largest element maps
//     inside [-qmax, qmax] and is never clipped by scale rounding; clamped to kF16Max (rows with
//     amax > qmax * kF16Max saturate). amax == 0 (or nothing finite) stores scale 0.
//   * Asymmetric int4: min is rounded DOWN to an f16 (clamped to +-kF16Max) and
//     scale = (max - min_f16) / 15 rounded UP, so every finite element of the group lies within
//     [min_f16, min_f16 + 15 * scale] and rounding error stays below scale / 2.
//   * inv_scale = 1 / scale, or 0 when scale is 0; every element then quantizes to code 0 (int) or
//     0 / NaN (fp8), and decodes to 0 (or min).
//   * A scale is never 0 when amax > qmax * 2^-24: the smallest scale is the f16 subnormal 2^-24,
//     so tiny rows do not produce inf or NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvengine::quant_internal {

inline constexpr float kInt8QMax = 127.0f;
inline constexpr float kInt4QMax = 15.0f;

struct SymmetricScale {
  uint16_t scale_f16 = 0;  // Stored bits.
  float scale = 0.0f;      // F16ToF32(scale_f16), what DecodeRow multiplies codes by.
  float inv_scale = 0.0f;  // 1 / scale, or 0 when scale == 0.
};

// amax: max |x| over the finite elements of the row (0 when none); qmax: 127, 448 or 57344.
SymmetricScale MakeSymmetricScale(float amax, float qmax);

struct Int4Params {
  uint16_t scale_f16 = 0;  // Stored bits, byte offset 0 of the group's 4 scale bytes.
  uint16_t min_f16 = 0;    // Stored bits, byte offset 2.
  float scale = 0.0f;      // Decoded: x = min + code * scale.
  float min = 0.0f;
  float inv_scale = 0.0f;  // 1 / scale, or 0 when scale == 0.
};

// lo, hi: min and max over the finite elements of the group; lo > hi means there were none.
Int4Params MakeInt4Params(float lo, float hi);

// Reads the stored int4 parameters of group `group` from a row's scale bytes (for decoding:
// inv_scale is left 0).
Int4Params LoadInt4Params(const uint8_t* scale, int group);

// f16 scale bytes are stored in host order (little-endian on every supported target) at any
// alignment.
inline void StoreU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

}  // namespace kvengine::quant_internal
