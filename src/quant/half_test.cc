// The scalar conversions are checked against their definitions: exhaustively where the format is
// small (every f16, bf16 and fp8 bit pattern), and by "is it the nearest value, ties to even"
// at every midpoint between neighbours.
#include "quant/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

namespace kvengine {
namespace {

uint32_t Bits(float x) { return std::bit_cast<uint32_t>(x); }
float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

// Value of a binary float code with `exp_bits` / `mant_bits` and IEEE semantics (inf/NaN at the
// top exponent), computed in double from the definition.
double ReferenceValue(uint32_t code, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t e = (code >> mant_bits) & ((1u << exp_bits) - 1);
  const uint32_t m = code & ((1u << mant_bits) - 1);
  const double sign = (code >> (exp_bits + mant_bits)) & 1 ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - mant_bits);
  return sign * std::ldexp(static_cast<double>((1u << mant_bits) + m),
                           static_cast<int>(e) - bias - mant_bits);
}

TEST(F16Test, EveryCodeDecodesExactlyAndRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float v = F16ToF32(static_cast<uint16_t>(h));
    const uint32_t e = (h >> 10) & 0x1F;
    if (e == 31) {
      if ((h & 0x3FF) == 0) {
        EXPECT_TRUE(std::isinf(v) && std::signbit(v) == ((h & 0x8000) != 0)) << h;
      } else {
        // Quiet NaN, payload kept (as vcvtph2ps).
        EXPECT_EQ(Bits(v), ((h & 0x8000u) << 16) | 0x7FC00000u | ((h & 0x3FFu) << 13)) << h;
      }
      continue;
    }
    ASSERT_EQ(static_cast<double>(v), ReferenceValue(h, 5, 10)) << h;
    ASSERT_EQ(F32ToF16(v), h) << h;
  }
}

// For each pair of neighbours (a, b), the exact midpoint rounds to the one with an even mantissa
// and the floats just beside it round to the nearer one.
template <class Encode, class Decode>
void CheckMidpoints(uint32_t first, uint32_t last, Encode encode, Decode decode) {
  for (uint32_t c = first; c < last; ++c) {
    const float a = decode(c);
    const float b = decode(c + 1);
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // Exact.
    ASSERT_EQ(static_cast<double>(mid) * 2, static_cast<double>(a) + b);
    const uint32_t even = (c % 2 == 0) ? c : c + 1;
    ASSERT_EQ(encode(mid), even) << c;
    ASSERT_EQ(encode(std::nextafter(mid, -1.0f)), c) << c;
    ASSERT_EQ(encode(std::nextafter(mid, std::numeric_limits<float>::infinity())), c + 1) << c;
    ASSERT_EQ(encode(-mid), even | (1u << (8 * sizeof(decltype(encode(mid))) - 1))) << c;
  }
}

TEST(F16Test, RoundsToNearestEven) {
  CheckMidpoints(
      0, 0x7BFF, [](float x) { return F32ToF16(x); },
      [](uint32_t c) { return F16ToF32(static_cast<uint16_t>(c)); });
  // Overflow: 65520 is the midpoint between 65504 and 2^16; ties go to the even one, inf.
  EXPECT_EQ(F32ToF16(65519.996f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);
  EXPECT_EQ(F32ToF16(-1e30f), 0xFC00);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7C00);
  // Underflow: half the smallest subnormal is a tie with zero.
  EXPECT_EQ(F32ToF16(0x1p-25f), 0x0000);
  EXPECT_EQ(F32ToF16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(F32ToF16(-1e-30f), 0x8000);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(F16Test, NaNsStayQuietNaNs) {
  EXPECT_EQ(F32ToF16(FromBits(0x7F800001u)), 0x7E00);  // Signalling, payload below f16's bits.
  EXPECT_EQ(F32ToF16(FromBits(0x7FC00000u)), 0x7E00);
  EXPECT_EQ(F32ToF16(FromBits(0xFFFFE000u)), 0xFFFF);
  EXPECT_EQ(F32ToF16(FromBits(0x7FA02000u)), 0x7F01);
  EXPECT_EQ(Bits(F16ToF32(0x7C01)), 0x7FC02000u);
}

TEST(F16Test, DirectedRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-30.0f, 17.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = (i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    if (std::fabs(x) > kF16Max) continue;
    const uint16_t up = F32ToF16RoundUp(x);
    const uint16_t down = F32ToF16RoundDown(x);
    ASSERT_GE(F16ToF32(up), x);
    ASSERT_LE(F16ToF32(down), x);
    // Adjacent (or equal when x is an f16): nothing representable lies strictly between.
    const uint16_t nearest = F32ToF16(x);
    ASSERT_TRUE(nearest == up || nearest == down) << x;
    if (F16ToF32(nearest) == x) {
      ASSERT_EQ(F16ToF32(up), x);
      ASSERT_EQ(F16ToF32(down), x);
    }
  }
  EXPECT_EQ(F32ToF16RoundUp(1e9f), kF16MaxBits);
  EXPECT_EQ(F32ToF16RoundUp(std::numeric_limits<float>::infinity()), kF16MaxBits);
  EXPECT_EQ(F32ToF16RoundDown(-1e9f), 0xFBFF);
  EXPECT_EQ(F32ToF16RoundDown(1e9f), kF16MaxBits);
  EXPECT_EQ(F32ToF16RoundUp(1e-10f), 0x0001);
  EXPECT_EQ(F32ToF16RoundDown(1e-10f), 0x0000);
  EXPECT_EQ(F32ToF16RoundDown(-1e-10f), 0x8001);
  EXPECT_EQ(F32ToF16RoundUp(-1e-10f), 0x8000);
  EXPECT_EQ(F32ToF16RoundUp(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16RoundDown(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16RoundUp(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16RoundUp(std::nextafter(1.0f, 2.0f)), 0x3C01);
  EXPECT_EQ(F32ToF16RoundDown(std::nextafter(1.0f, 0.0f)), 0x3BFF);
  EXPECT_EQ(F32ToF16RoundUp(std::numeric_limits<float>::quiet_NaN()), 0);
}

TEST(Bf16Test, EveryCodeRoundTripsAndRoundsToNearestEven) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float v = Bf16ToF32(static_cast<uint16_t>(b));
    EXPECT_EQ(Bits(v), b << 16);
    if (!std::isnan(v)) {
      ASSERT_EQ(F32ToBf16(v), b) << b;
    }
  }
  CheckMidpoints(
      0, 0x7F7F, [](float x) { return F32ToBf16(x); },
      [](uint32_t c) { return Bf16ToF32(static_cast<uint16_t>(c)); });
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()), 0x7F80);  // Rounds up to inf.
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001u)), 0x7FC0);              // NaN stays NaN.
  EXPECT_EQ(F32ToBf16(FromBits(0xFFC12345u)), 0xFFC1);
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

struct Fp8Case {
  const char* name;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  int exp_bits;
  int mant_bits;
  float max;
  uint8_t max_code;
  uint8_t nan_code;
};

const Fp8Case kFp8Cases[] = {
    {"e4m3", F32ToFp8E4M3, Fp8E4M3ToF32, 4, 3, kFp8E4M3Max, 0x7E, 0x7F},
    {"e5m2", F32ToFp8E5M2, Fp8E5M2ToF32, 5, 2, kFp8E5M2Max, 0x7B, 0x7E},
};

TEST(Fp8Test, EveryCodeDecodesExactly) {
  for (const Fp8Case& f : kFp8Cases) {
    SCOPED_TRACE(f.name);
    for (uint32_t c = 0; c < 256; ++c) {
      const float v = f.decode(static_cast<uint8_t>(c));
      const uint32_t a = c & 0x7F;
      const bool e4m3 = f.exp_bits == 4;
      if ((e4m3 && a == 0x7F) || (!e4m3 && a > 0x7C)) {
        EXPECT_TRUE(std::isnan(v)) << c;
        EXPECT_EQ(std::signbit(v), c >= 0x80) << c;
        continue;
      }
      if (!e4m3 && a == 0x7C) {
        EXPECT_TRUE(std::isinf(v)) << c;
        continue;
      }
      ASSERT_EQ(static_cast<double>(v), ReferenceValue(c, f.exp_bits, f.mant_bits)) << c;
      ASSERT_EQ(f.encode(v), c) << c;  // Round trip (-0 keeps its sign).
    }
    EXPECT_EQ(f.decode(f.max_code), f.max);
  }
  EXPECT_EQ(Fp8E4M3ToF32(0x38), 1.0f);
  EXPECT_EQ(Fp8E4M3ToF32(0x01), 0x1p-9f);
  EXPECT_EQ(Fp8E4M3ToF32(0x08), 0x1p-6f);
  EXPECT_EQ(Fp8E5M2ToF32(0x3C), 1.0f);
  EXPECT_EQ(Fp8E5M2ToF32(0x01), 0x1p-16f);
}

TEST(Fp8Test, RoundsToNearestEvenAndSaturates) {
  for (const Fp8Case& f : kFp8Cases) {
    SCOPED_TRACE(f.name);
    CheckMidpoints(0, f.max_code, f.encode,
                   [&f](uint32_t c) { return f.decode(static_cast<uint8_t>(c)); });
    constexpr float kInf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(f.encode(1e9f), f.max_code);
    EXPECT_EQ(f.encode(kInf), f.max_code);
    EXPECT_EQ(f.encode(-kInf), f.max_code | 0x80);
    EXPECT_EQ(f.encode(f.max * 1.0625f), f.max_code);  // Past the would-be next value's midpoint.
    EXPECT_EQ(f.encode(std::numeric_limits<float>::quiet_NaN()), f.nan_code);
    EXPECT_EQ(f.encode(-std::numeric_limits<float>::quiet_NaN()), f.nan_code | 0x80);
    EXPECT_EQ(f.encode(std::numeric_limits<float>::denorm_min()), 0);
    EXPECT_EQ(f.encode(-0.0f), 0x80);
  }
}

// Brute force: the encoded value is the nearest finite code's (ties to the even code).
TEST(Fp8Test, MatchesBruteForceNearest) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> exponent(-20.0f, 17.0f);
  for (const Fp8Case& f : kFp8Cases) {
    SCOPED_TRACE(f.name);
    for (int i = 0; i < 5000; ++i) {
      const float x = std::exp2(exponent(rng));
      double best_err = HUGE_VAL;
      uint32_t best = 0;
      for (uint32_t c = 0; c <= f.max_code; ++c) {
        const double err = std::fabs(static_cast<double>(f.decode(static_cast<uint8_t>(c))) - x);
        if (err < best_err || (err == best_err && c % 2 == 0)) {
          best_err = err;
          best = c;
        }
      }
      ASSERT_EQ(f.encode(x), best) << x;
      ASSERT_EQ(f.encode(-x), best | 0x80) << x;
    }
  }
}

}  // namespace
}  // namespace kvengine
