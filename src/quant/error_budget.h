// How much error each KV format may introduce, as named constants. Tests hold the codecs to them
// (codec_test.cc) and higher layers use them to set tolerances (quantized vs f32 attention).
//
// Round trip: for a row x whose finite elements satisfy |x| <= MaxUnsaturatedAbs(dtype), every
// element obeys
//     |Decode(Encode(x))[i] - x[i]| <= rel * |x[i]| + per_amax * amax + per_range * range + abs
// where amax  = max |x| over the row's finite elements (int4: over the element's group),
//       range = group max - group min (int4 only, 0 otherwise).
// The terms come from the format definitions (codec.h, codec_params.h):
//   * a float format with p significant bits rounds to nearest: relative error 2^-p, plus half the
//     subnormal step below its smallest normal (f16 p = 11, bf16 8, e4m3 4, e5m2 3);
//   * fp8 values are scaled by the f16 scale s = amax / fp8_max rounded up (s <= amax / fp8_max *
//     (1 + 2^-10) + 2^-24); the fp8 subnormal half-step times s gives the per_amax and abs terms;
//   * int8: code rounding costs at most s / 2 with s = amax / 127 rounded up;
//   * int4: at most s / 2 with s = (max - min_f16) / 15 rounded up, where the f16 min is rounded
//     down (at most one f16 ulp, 2^-10 |min| or 2^-24, below the true min);
//   * the float arithmetic of encode and decode (x * inv_scale, code * scale, + min) adds a few
//     2^-24 relative roundings, folded into the terms as small slack (the 2^-21 / 2^-20 parts).
#pragma once

#include <limits>

#include "quant/half.h"
#include "quant/kv_dtype.h"

namespace kvengine {

// f16: relative 2^-11 in the normal range, 2^-25 absolute (half of 2^-24) in the subnormal range.
inline constexpr float kF16MaxRelError = 0x1p-11f;
inline constexpr float kF16MaxAbsError = 0x1p-25f;
// bf16: relative 2^-8; its subnormals are those of binary32 times 2^16.
inline constexpr float kBf16MaxRelError = 0x1p-8f;
inline constexpr float kBf16MaxAbsError = 0x1p-134f;
// fp8 e4m3 (scaled): relative 2^-4 of the value, plus the scaled subnormal half-step 2^-10 * s.
inline constexpr float kFp8E4M3MaxRelError = 0x1p-4f + 0x1p-21f;
inline constexpr float kFp8E4M3MaxAbsErrorPerAmax = 0x1p-10f / kFp8E4M3Max * (1.0f + 0x1p-9f);
inline constexpr float kFp8E4M3MaxAbsError = 0x1p-34f;
// fp8 e5m2 (scaled): relative 2^-3, plus the scaled subnormal half-step 2^-17 * s.
inline constexpr float kFp8E5M2MaxRelError = 0x1p-3f + 0x1p-21f;
inline constexpr float kFp8E5M2MaxAbsErrorPerAmax = 0x1p-17f / kFp8E5M2Max * (1.0f + 0x1p-9f);
inline constexpr float kFp8E5M2MaxAbsError = 0x1p-41f;
// int8: amax / 254 (half a step), + f16 scale rounding (2^-10) + arithmetic slack.
inline constexpr float kInt8MaxAbsErrorPerAmax = (1.0f + 0x1p-10f) / 254.0f + 0x1p-21f;
inline constexpr float kInt8MaxAbsError = 0x1p-25f;
// int4: (group max - group min) / 30 (half a step) + f16 scale rounding; the f16 min's rounding
// adds up to 2^-10 |min| / 30 <= 2^-10 amax / 30.
inline constexpr float kInt4MaxAbsErrorPerRange = (1.0f + 0x1p-9f) / 30.0f;
inline constexpr float kInt4MaxAbsErrorPerAmax = 0x1p-10f / 30.0f + 0x1p-20f;
inline constexpr float kInt4MaxAbsError = 0x1p-24f;

// SIMD vs scalar reference (both decode identically; they sum in different orders):
//   |DotRow - ref::DotRow| <= kDotRowRelTolerance * (n + 1) * sum_i |decoded[i] * q[i]|
//   |AxpyRow - ref::AxpyRow| <= kAxpyRowRelTolerance * (|acc[i]| + |a * decoded[i]|)
// (float summation of n terms errs by at most about n * 2^-24 of the sum of magnitudes; a fused
// multiply-add differs from multiply-then-add by at most one rounding of each).
inline constexpr float kDotRowRelTolerance = 0x1p-23f;
inline constexpr float kAxpyRowRelTolerance = 0x1p-23f;

struct ErrorBudget {
  float rel = 0.0f;        // Times |x|.
  float per_amax = 0.0f;   // Times the row (int4: group) amax.
  float per_range = 0.0f;  // Times group max - group min (int4).
  float abs = 0.0f;        // Absolute.

  constexpr float Bound(float x_abs, float amax, float range) const {
    return rel * x_abs + per_amax * amax + per_range * range + abs;
  }
};

constexpr ErrorBudget ErrorBudgetOf(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32:
      return {};
    case KvDtype::kF16:
      return {kF16MaxRelError, 0.0f, 0.0f, kF16MaxAbsError};
    case KvDtype::kBF16:
      return {kBf16MaxRelError, 0.0f, 0.0f, kBf16MaxAbsError};
    case KvDtype::kFp8E4M3:
      return {kFp8E4M3MaxRelError, kFp8E4M3MaxAbsErrorPerAmax, 0.0f, kFp8E4M3MaxAbsError};
    case KvDtype::kFp8E5M2:
      return {kFp8E5M2MaxRelError, kFp8E5M2MaxAbsErrorPerAmax, 0.0f, kFp8E5M2MaxAbsError};
    case KvDtype::kInt8:
      return {0.0f, kInt8MaxAbsErrorPerAmax, 0.0f, kInt8MaxAbsError};
    case KvDtype::kInt4:
      return {0.0f, kInt4MaxAbsErrorPerAmax, kInt4MaxAbsErrorPerRange, kInt4MaxAbsError};
  }
  return {};
}

// Largest |x| for which the round-trip budget holds. Beyond it: f16 overflows to inf (bf16 only at
// float max); fp8 and int8 saturate once amax exceeds qmax * kF16Max (the largest f16 scale); int4
// saturates once an element exceeds kF16Max in magnitude (its min is an f16).
constexpr float MaxUnsaturatedAbs(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32:
      return std::numeric_limits<float>::max();
    case KvDtype::kBF16:
      return 0x1.fep127f;  // The largest bf16; larger floats may round up to inf.
    case KvDtype::kF16:
      return kF16Max;
    case KvDtype::kFp8E4M3:
      return kFp8E4M3Max * kF16Max;
    case KvDtype::kFp8E5M2:
      return kFp8E5M2Max * kF16Max;
    case KvDtype::kInt8:
      return 127.0f * kF16Max;
    case KvDtype::kInt4:
      return kF16Max;
  }
  return 0.0f;
}

}  // namespace kvengine
