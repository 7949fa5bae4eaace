// Scalar conversions between binary32 and the narrow float formats KV rows and model weights use.
//
// Formats (bits, most significant first):
//   f16      IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa. Max 65504, subnormals down
//            to 2^-24, inf and NaN.
//   bf16     bfloat16: 1 sign, 8 exponent (bias 127), 7 mantissa; the top half of a binary32.
//   fp8 e4m3 OCP "e4m3fn": 1 sign, 4 exponent (bias 7), 3 mantissa. Max 448, subnormals down to
//            2^-9, no inf; NaN is S.1111.111 (0x7F / 0xFF).
//   fp8 e5m2 OCP e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa. Max 57344, subnormals down to
//            2^-16, inf is S.11111.00, NaN is S.11111.{01,10,11}.
//
// Every float -> narrow conversion rounds to nearest, ties to even. What happens beyond the range:
//   f16, bf16 : IEEE overflow to +-inf; NaN stays NaN (quiet bit set, top payload bits kept, which
//               is what x86 F16C vcvtps2ph produces, so SIMD code using it matches bit for bit).
//   fp8 (both): saturating: +-inf and finite values beyond the max become +-max; NaN becomes the
//               canonical NaN (e4m3: S.1111.111, e5m2: S.11111.10).
// Narrow -> float conversions are exact. An f16 NaN decodes to a quiet NaN with its payload (as
// vcvtph2ps does); bf16 decodes by a plain shift (bits kept as they are); fp8 NaNs decode to the
// default quiet NaN with the code's sign.
//
// These are the reference definitions: the SIMD codecs in codec.h are tested to match them bit for
// bit. All functions are pure and thread-safe; none has undefined behaviour for any input.
#pragma once

#include <cstdint>

namespace kvengine {

inline constexpr float kF16Max = 65504.0f;
inline constexpr float kF16MinNormal = 0x1p-14f;
inline constexpr float kF16MinSubnormal = 0x1p-24f;
inline constexpr uint16_t kF16MaxBits = 0x7BFF;  // 65504.
inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kFp8E5M2Max = 57344.0f;

// binary32 <-> binary16.
uint16_t F32ToF16(float x);
float F16ToF32(uint16_t h);

// binary32 -> binary16 with directed rounding, saturating at +-kF16Max instead of overflowing.
// Used for quantization scales, where the direction of the error matters (see codec_params.h).
// NaN maps to 0.
uint16_t F32ToF16RoundUp(float x);    // Smallest f16 >= x (or kF16Max).
uint16_t F32ToF16RoundDown(float x);  // Largest f16 <= x (or -kF16Max).

// binary32 <-> bfloat16.
uint16_t F32ToBf16(float x);
float Bf16ToF32(uint16_t b);

// binary32 <-> fp8 (saturating on the way in).
uint8_t F32ToFp8E4M3(float x);
float Fp8E4M3ToF32(uint8_t c);
uint8_t F32ToFp8E5M2(float x);
float Fp8E5M2ToF32(uint8_t c);

}  // namespace kvengine
