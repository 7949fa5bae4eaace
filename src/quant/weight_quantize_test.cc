// The block quantizers (weight_quantize.h) against the kernels' scalar decoders
// (kernels_ref::DequantizeBlocks, the reference the runtime's SIMD decoders equal bit for bit):
//   * random data, with zero, constant, one-signed, outlier and tiny blocks, decodes within each
//     format's error bound (derived from the input alone, in the header's terms);
//   * values on a format's grid (built with the format's decoding formula from random scales and
//     codes, the extreme codes present) decode back bit for bit, with the same scale fields.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_types.h"
#include "quant/dequant_ref.h"
#include "quant/weight_blocks.h"
#include "quant/weight_view.h"
#include "quant/half.h"
#include "quant/weight_quantize.h"

namespace kvengine {
namespace {

constexpr GgmlType kTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                               GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

// Relative excess of a scale rounded up to f16 (2^-11 for normal values, doubled for margin),
// and the absolute one where it is subnormal (the f16 step 2^-24).
constexpr float kF16Up = 0x1p-10f;
constexpr float kF16UpAbs = 0x1p-24f;
// The float roundings of the quantizer's divisions and of the decoder's final add, relative to
// the step (generous: each is a few 2^-24).
constexpr float kStepRoundoff = 0x1p-12f;

std::vector<uint8_t> Quantize(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(*GgmlRowBytes(type, x.size()));
  QuantizeBlocks(type, x, out);
  return out;
}

std::vector<float> Dequantize(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  const GgmlTypeTraits t = GetGgmlTypeTraits(type);
  std::vector<float> y(n);
  kernels_ref::DequantizeBlocks(*WeightFormatOf(type), bytes.data(),
                                static_cast<int64_t>(n / t.block_size), y.data());
  return y;
}

float Amax(const float* x, size_t n) {
  float a = 0;
  for (size_t j = 0; j < n; ++j) a = std::max(a, std::fabs(x[j]));
  return a;
}

// err[i] <= bound[i] for every element, from the input alone (weight_quantize.h's bounds).
std::vector<float> ErrorBounds(GgmlType type, const std::vector<float>& x) {
  std::vector<float> bound(x.size());
  const bool five = type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1 || type == GgmlType::kQ5_K;
  const float levels = five ? 31.0f : 15.0f;
  const size_t block = GetGgmlTypeTraits(type).block_size;
  for (size_t b = 0; b < x.size(); b += block) {
    const float* xb = x.data() + b;
    float* eb = bound.data() + b;
    if (type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0) {
      // Step d = amax / zero (rounded up); elements with |x| <= (zero - 1) d never clip.
      const float zero = five ? 16.0f : 8.0f;
      const float s = Amax(xb, 32) / zero;
      const float d = s * (1 + kF16Up) + kF16UpAbs;
      for (size_t j = 0; j < 32; ++j) {
        eb[j] = std::fabs(xb[j]) <= (zero - 1) * s ? (0.5f + kStepRoundoff) * d
                                                   : (1 + kStepRoundoff) * d;
      }
    } else if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) {
      // Step (max - m) / levels, m = min rounded down to f16.
      const float lo = *std::min_element(xb, xb + 32), hi = *std::max_element(xb, xb + 32);
      const float m_slack = std::fabs(lo) * kF16Up + kF16UpAbs;
      const float d = (hi - lo + m_slack) / levels * (1 + kF16Up) + kF16UpAbs;
      for (size_t j = 0; j < 32; ++j) eb[j] = (0.5f + kStepRoundoff) * d + m_slack;
    } else if (type == GgmlType::kQ4_K || type == GgmlType::kQ5_K) {
      // Sub-block s: lo = min(0, min x), hi = max x; dmin ~ max(-lo) / 63; its stored step is at
      // most (hi - lo + dmin) / levels + d with d ~ max(hi - lo + dmin) / (levels 63).
      float max_neg_lo = 0, max_span = 0;
      float lo[8], hi[8];
      for (size_t s = 0; s < 8; ++s) {
        lo[s] = std::min(0.0f, *std::min_element(xb + 32 * s, xb + 32 * s + 32));
        hi[s] = *std::max_element(xb + 32 * s, xb + 32 * s + 32);
        max_neg_lo = std::max(max_neg_lo, -lo[s]);
        max_span = std::max(max_span, hi[s] - lo[s]);
      }
      const float dmin = max_neg_lo / 63 * (1 + kF16Up) + kF16UpAbs;
      const float d = (max_span + dmin) / (levels * 63) * (1 + kF16Up) + kF16UpAbs;
      for (size_t s = 0; s < 8; ++s) {
        const float step = (hi[s] - lo[s] + dmin) / levels + d;
        // kStepRoundoff of the codes' and the mins' super-block units covers CeilCode's slack.
        const float e = (0.5f + kStepRoundoff) * step + kStepRoundoff * (levels * d + dmin);
        for (size_t j = 0; j < 32; ++j) eb[32 * s + j] = e;
      }
    } else {
      // Q6_K, sub-block s of 16: step ~ amax / 32 rounded up to a multiple of d ~ max step / 127;
      // elements with |x| <= 31 steps never clip.
      float max_s = 0;
      for (size_t s = 0; s < 16; ++s) max_s = std::max(max_s, Amax(xb + 16 * s, 16) / 32);
      const float d = max_s / 127 * (1 + kF16Up) + kF16UpAbs;
      for (size_t s = 0; s < 16; ++s) {
        const float sub_s = Amax(xb + 16 * s, 16) / 32;
        const float step = sub_s + d;
        for (size_t j = 0; j < 16; ++j) {
          const float v = std::fabs(xb[16 * s + j]);
          eb[16 * s + j] = v <= 31 * sub_s ? (0.5f + kStepRoundoff) * step + kStepRoundoff * d
                                           : (1 + kStepRoundoff) * step + kStepRoundoff * d;
        }
      }
    }
  }
  return bound;
}

// 64 super-blocks (16384 elements) of uniform values in +-0.1 (a synthetic matrix's range), then
// special blocks of 256: zeros, a constant, all positive, all negative, one outlier, tiny values
// (f16 scales in the subnormals), one value per 32 non-zero.
std::vector<float> TestData(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  std::vector<float> x(64 * 256);
  for (float& v : x) v = u(rng);
  auto block = [&](auto value) {
    for (int j = 0; j < 256; ++j) x.push_back(value(j));
  };
  block([](int) { return 0.0f; });
  block([](int) { return 0.0375f; });
  block([&](int) { return std::fabs(u(rng)) + 0.02f; });
  block([&](int) { return -std::fabs(u(rng)) - 0.5f; });
  block([&](int j) { return j == 77 ? 25.0f : u(rng); });
  block([&](int) { return u(rng) * 1e-5f; });
  block([&](int j) { return j % 32 == 5 ? u(rng) : 0.0f; });
  return x;
}

TEST(WeightQuantizeTest, RandomDataDecodesWithinEachFormatsBound) {
  const std::vector<float> x = TestData(1);
  for (GgmlType type : kTypes) {
    SCOPED_TRACE(GgmlTypeName(type));
    const std::vector<uint8_t> q = Quantize(type, x);
    const std::vector<float> y = Dequantize(type, q, x.size());
    const std::vector<float> bound = ErrorBounds(type, x);
    double sq_err = 0, sq = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(y[i] - x[i]), bound[i]) << "element " << i << " x " << x[i];
      if (i < 64 * 256) {
        sq_err += double(y[i] - x[i]) * (y[i] - x[i]);
        sq += double(x[i]) * x[i];
      }
    }
    for (size_t i = 64 * 256; i < 65 * 256; ++i) ASSERT_EQ(y[i], 0.0f) << "zero block " << i;
    // Relative RMS error on the uniform part (printed for the docs; llama.cpp's searched
    // quantizers get somewhat less on the K-quants).
    const double rel_rms = std::sqrt(sq_err / sq);
    std::printf("  %-5s relative RMS error %.4f on uniform data\n", GgmlTypeName(type), rel_rms);
    // Uniform data's step is about 2 amax / 2^bits, so the RMS error about that / sqrt(12) and
    // relative to the RMS amax / sqrt(3): 1 / 2^bits. 4-bit formats stay below 0.08, 5-bit
    // below 0.04, 6-bit below 0.02.
    const double ceiling =
        type == GgmlType::kQ6_K                                                           ? 0.02
        : (type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1 || type == GgmlType::kQ5_K) ? 0.04
                                                                                          : 0.08;
    EXPECT_LT(rel_rms, ceiling);
  }
}

// A random f16 value of magnitude in [2^e, 2^(e+1)), as a float.
float RandomF16(std::mt19937_64& rng, int e) {
  const int mantissa = std::uniform_int_distribution<int>(0, 1023)(rng);
  return std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f, e);
}

// Random codes in [0, top] for n elements, with 0 and (unless only_zero) top each at a random
// place, as the quantizer needs to reproduce the scales exactly.
std::vector<int> Codes(std::mt19937_64& rng, size_t n, int top, bool only_zero = false) {
  std::uniform_int_distribution<int> code(0, top);
  std::uniform_int_distribution<size_t> at(0, n - 1);
  std::vector<int> q(n);
  for (int& c : q) c = code(rng);
  const size_t zero_at = at(rng);
  q[zero_at] = 0;
  if (!only_zero) {
    size_t top_at = at(rng);
    while (top_at == zero_at) top_at = at(rng);
    q[top_at] = top;
  }
  return q;
}

float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return F16ToF32(h);
}

// Grid values: x from the format's decoding formula (weight_blocks.h), with scales chosen so that
// every product and sum is exact in f32 and the extreme codes present. The quantizer must find the
// same scales and codes, so x decodes back bit for bit.
std::vector<float> GridBlock(GgmlType type, std::mt19937_64& rng, std::vector<float>* scales) {
  std::vector<float> x;
  std::uniform_int_distribution<int> coin(0, 1);
  scales->clear();
  if (type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0) {
    const int zero = type == GgmlType::kQ5_0 ? 16 : 8;
    const float d = RandomF16(rng, -9) * (coin(rng) ? 1.0f : -1.0f);
    for (int q : Codes(rng, 32, 2 * zero - 1, /*only_zero=*/true)) {
      x.push_back(static_cast<float>(q - zero) * d);
    }
    scales->push_back(d);
  } else if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) {
    const int top = type == GgmlType::kQ5_1 ? 31 : 15;
    const float d = RandomF16(rng, -7);                               // lsb 2^-17.
    const float m = RandomF16(rng, -3) * (coin(rng) ? 1.0f : -1.0f);  // lsb 2^-13.
    for (int q : Codes(rng, 32, top)) x.push_back(static_cast<float>(q) * d + m);
    scales->assign({d, m});
  } else if (type == GgmlType::kQ4_K || type == GgmlType::kQ5_K) {
    const int top = type == GgmlType::kQ5_K ? 31 : 15;
    // d and dmin in one binade (lsb 2^-18): every (d sc) q - dmin mn is exact.
    const float d = RandomF16(rng, -8), dmin = RandomF16(rng, -8);
    std::uniform_int_distribution<int> six(1, 63), six0(0, 63), sub(0, 7);
    int sc[8], mn[8];
    for (int s = 0; s < 8; ++s) {
      sc[s] = six(rng);
      mn[s] = six0(rng);
    }
    sc[sub(rng)] = 63;  // d = max scale / 63 and dmin = max min / 63 exactly.
    mn[sub(rng)] = 63;
    for (int s = 0; s < 8; ++s) {
      const float ds = d * static_cast<float>(sc[s]), ms = dmin * static_cast<float>(mn[s]);
      for (int q : Codes(rng, 32, top)) x.push_back(ds * static_cast<float>(q) - ms);
      scales->push_back(static_cast<float>(sc[s]));
      scales->push_back(static_cast<float>(mn[s]));
    }
    scales->push_back(d);
    scales->push_back(dmin);
  } else {  // Q6_K
    const float d = RandomF16(rng, -12);
    std::uniform_int_distribution<int> eight(1, 127), sub(0, 15);
    int sc[16];
    for (int s = 0; s < 16; ++s) sc[s] = eight(rng) * (coin(rng) ? 1 : -1);
    sc[sub(rng)] = 127 * (coin(rng) ? 1 : -1);
    for (int s = 0; s < 16; ++s) {
      const float ds = d * static_cast<float>(sc[s]);
      // Code 0 (value -32 ds) is the sub-block's largest magnitude: the quantizer's step.
      for (int q : Codes(rng, 16, 63, /*only_zero=*/true)) {
        x.push_back(ds * static_cast<float>(q - 32));
      }
      scales->push_back(static_cast<float>(sc[s]));
    }
    scales->push_back(d);
  }
  return x;
}

// The scale fields of one block as GridBlock lists them, read with weight_blocks.h's layout.
std::vector<float> StoredScales(GgmlType type, const uint8_t* b) {
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
      return {LoadF16(b)};
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
      return {LoadF16(b), LoadF16(b + 2)};
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      std::vector<float> out;
      for (int s = 0; s < 8; ++s) {
        uint8_t sc, mn;
        KQuantScaleMin(b + 4, s, &sc, &mn);
        out.push_back(sc);
        out.push_back(mn);
      }
      out.push_back(LoadF16(b));
      out.push_back(LoadF16(b + 2));
      return out;
    }
    default: {  // Q6_K
      std::vector<float> out;
      for (int s = 0; s < 16; ++s) out.push_back(static_cast<int8_t>(b[192 + s]));
      out.push_back(LoadF16(b + 208));
      return out;
    }
  }
}

TEST(WeightQuantizeTest, ValuesOnTheGridDecodeBackExactly) {
  std::mt19937_64 rng(2);
  for (GgmlType type : kTypes) {
    SCOPED_TRACE(GgmlTypeName(type));
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> scales;
      const std::vector<float> x = GridBlock(type, rng, &scales);
      const std::vector<uint8_t> q = Quantize(type, x);
      ASSERT_EQ(StoredScales(type, q.data()), scales) << "trial " << trial;
      const std::vector<float> y = Dequantize(type, q, x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(y[i], x[i]) << "trial " << trial << " element " << i;
      }
      // Quantizing the decoded block again gives the same bytes (a fixed point).
      ASSERT_EQ(Quantize(type, y), q) << "trial " << trial;
    }
  }
}

TEST(WeightQuantizeTest, SizesAreGgmlsAndEveryTypeIsKnown) {
  for (GgmlType type : kTypes) EXPECT_TRUE(IsQuantizedBlockType(type)) << GgmlTypeName(type);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                        GgmlType::kQ2_K, GgmlType::kIQ4_NL}) {
    EXPECT_FALSE(IsQuantizedBlockType(type)) << GgmlTypeName(type);
  }
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kQ4_0, 64), 2 * kQ4_0BlockBytes);
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kQ5_1, 32), kQ5_1BlockBytes);
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kQ4_K, 512), 2 * kQ4_KBlockBytes);
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kQ6_K, 256), kQ6_KBlockBytes);
}

}  // namespace
}  // namespace kvengine
