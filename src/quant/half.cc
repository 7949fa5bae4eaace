// Reference scalar conversions. fp8 is written from the format definition (exponent, mantissa,
// std::nearbyint for round-to-nearest-even), a formulation independent of the bit tricks in
// codec_simd-inl.h; f16 and bf16 use integer rounding because model loading depends on their speed.
// half_test.cc checks all of them against the definitions (every code, every midpoint).
#include "quant/half.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kvengine {
namespace {

constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;

// Splits x into a sign (0 or 1) and |x|.
struct SignAbs {
  uint32_t sign;
  float abs;
};
SignAbs Split(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  return {bits >> 31, std::bit_cast<float>(bits & kF32AbsMask)};
}

float WithSign(uint32_t sign, float abs) { return sign != 0 ? -abs : abs; }

// |a| in [2^min_exp, max) with `mant_bits` stored mantissa bits: returns the biased exponent and
// mantissa of a rounded to nearest even, as (biased_exp << mant_bits) | mantissa. A carry out of
// the mantissa correctly bumps the exponent.
uint32_t RoundNormal(float a, int mant_bits, int bias) {
  int e = 0;
  const float f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1).
  const float frac = (2.0f * f - 1.0f) * std::ldexp(1.0f, mant_bits);  // Exact.
  const uint32_t m = static_cast<uint32_t>(std::nearbyint(frac));      // 0 .. 2^mant_bits.
  const uint32_t biased = static_cast<uint32_t>(e - 1 + bias);
  return (biased << mant_bits) + m;  // m == 2^mant_bits carries into the exponent.
}

}  // namespace

// f16 is on the hot path of model loading (GGUF weights), so it is done with integer operations;
// half_test.cc checks it exhaustively against the definition.
uint16_t F32ToF16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t a = bits & kF32AbsMask;
  if (a > kF32Inf) {  // NaN: quiet, keep the top 9 payload bits.
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 2^16 or inf.
  if (a >= 0x38800000u) {
    // Normal (>= 2^-14): rebias the exponent, round the 13 dropped bits to nearest even. A carry
    // out of the mantissa bumps the exponent; [65520, 65536) thereby becomes 0x7C00 (inf).
    const uint32_t rounded = a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal: |x| = M * 2^(e - 150) with M the 24-bit significand; in units of 2^-24 that is
  // M >> (126 - e), rounded to nearest even. 1024 (a carry) is the smallest normal, 0x0400.
  const int e = static_cast<int>(a >> 23);
  const int shift = 126 - e;    // >= 14.
  if (shift > 24) return sign;  // Below 2^-25 (incl. binary32 subnormals): rounds to zero.
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t a = h & 0x7FFFu;
  if (a >= 0x7C00u) {  // inf, or NaN made quiet with its payload kept.
    const uint32_t quiet = a > 0x7C00u ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | kF32Inf | quiet | ((a & 0x3FFu) << 13));
  }
  if (a >= 0x0400u) return std::bit_cast<float>(sign | ((a << 13) + (112u << 23)));  // Normal.
  const float sub = static_cast<float>(a) * 0x1p-24f;                                // Exact.
  return sign != 0 ? -sub : sub;
}

uint16_t F32ToF16RoundUp(float x) {
  if (std::isnan(x)) return 0;
  uint16_t h = F32ToF16(x);
  if (F16ToF32(h) < x) h = (h & 0x8000u) != 0 ? h - 1 : h + 1;  // Toward +inf.
  if (h == 0x7C00u) return kF16MaxBits;
  if (h == 0xFC00u) return kF16MaxBits | 0x8000u;
  return h;
}

uint16_t F32ToF16RoundDown(float x) {
  if (std::isnan(x)) return 0;
  uint16_t h = F32ToF16(x);
  if (F16ToF32(h) > x) {  // Toward -inf.
    if (h == 0) {
      h = 0x8001u;
    } else {
      h = (h & 0x8000u) != 0 ? h + 1 : h - 1;
    }
  }
  if (h == 0x7C00u) return kF16MaxBits;
  if (h == 0xFC00u) return kF16MaxBits | 0x8000u;
  return h;
}

uint16_t F32ToBf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & kF32AbsMask) > kF32Inf) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  // Round to nearest even on the 16 dropped bits; a carry may reach the exponent (up to inf).
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

float Bf16ToF32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint8_t F32ToFp8E4M3(float x) {
  const auto [sign, abs] = Split(x);
  const uint32_t s = sign << 7;
  if (std::isnan(abs)) return static_cast<uint8_t>(s | 0x7Fu);
  if (abs >= kFp8E4M3Max) return static_cast<uint8_t>(s | 0x7Eu);  // Saturate (also inf).
  if (abs < 0x1p-6f) {  // Subnormal: multiples of 2^-9; 8 is the smallest normal (0x08).
    return static_cast<uint8_t>(s | static_cast<uint32_t>(std::nearbyint(abs * 0x1p9f)));
  }
  // Below 448 nothing rounds past 448 (the next e4m3 value would be 480).
  return static_cast<uint8_t>(s | RoundNormal(abs, 3, 7));
}

float Fp8E4M3ToF32(uint8_t c) {
  const uint32_t sign = c >> 7;
  const uint32_t a = c & 0x7Fu;
  if (a == 0x7Fu) return WithSign(sign, std::numeric_limits<float>::quiet_NaN());
  const int e = static_cast<int>(a >> 3);
  const uint32_t m = a & 7u;
  if (e == 0) return WithSign(sign, std::ldexp(static_cast<float>(m), -9));
  return WithSign(sign, std::ldexp(static_cast<float>(8 + m), e - 10));
}

uint8_t F32ToFp8E5M2(float x) {
  const auto [sign, abs] = Split(x);
  const uint32_t s = sign << 7;
  if (std::isnan(abs)) return static_cast<uint8_t>(s | 0x7Eu);
  if (abs >= kFp8E5M2Max) return static_cast<uint8_t>(s | 0x7Bu);  // Saturate (also inf).
  if (abs < 0x1p-14f) {  // Subnormal: multiples of 2^-16; 4 is the smallest normal (0x04).
    return static_cast<uint8_t>(s | static_cast<uint32_t>(std::nearbyint(abs * 0x1p16f)));
  }
  // Below 57344 nothing rounds past 57344 (the next value would be 61440).
  return static_cast<uint8_t>(s | RoundNormal(abs, 2, 15));
}

float Fp8E5M2ToF32(uint8_t c) {
  const uint32_t sign = c >> 7;
  const uint32_t a = c & 0x7Fu;
  const int e = static_cast<int>(a >> 2);
  const uint32_t m = a & 3u;
  if (e == 31) {
    return WithSign(sign, m == 0 ? std::numeric_limits<float>::infinity()
                                 : std::numeric_limits<float>::quiet_NaN());
  }
  if (e == 0) return WithSign(sign, std::ldexp(static_cast<float>(m), -16));
  return WithSign(sign, std::ldexp(static_cast<float>(4 + m), e - 17));
}

}  // namespace kvengine
