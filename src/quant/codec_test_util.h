// Test-only helpers shared by codec_test.cc and codec_simd_test.cc: random rows (never all zero)
// and encoded-row buffers with canary bytes that catch writes past RowFormatOf's sizes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "quant/codec.h"
#include "quant/kv_dtype.h"

namespace kvengine::testing_util {

// Row lengths: 1 and tiny odd ones (vector tails only), the test model's head_dim 8, lengths
// around vector and int4-group boundaries, common head_dims, MLA's 576, and a long one.
inline constexpr int kRowLengths[] = {1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17,  31,
                                      32, 33, 45, 64, 80, 96, 100, 128, 257, 576, 1000};

enum class Dist { kNormal, kUniform, kOutliers, kPositive, kNegative, kSmall, kWide };
inline constexpr Dist kAllDists[] = {Dist::kNormal,   Dist::kUniform,  Dist::kOutliers,
                                     Dist::kPositive, Dist::kNegative, Dist::kSmall,
                                     Dist::kWide};

inline const char* DistName(Dist d) {
  switch (d) {
    case Dist::kNormal:
      return "normal";
    case Dist::kUniform:
      return "uniform";
    case Dist::kOutliers:
      return "outliers";
    case Dist::kPositive:
      return "positive";
    case Dist::kNegative:
      return "negative";
    case Dist::kSmall:
      return "small";
    case Dist::kWide:
      return "wide";
  }
  return "?";
}

inline std::vector<float> RandomRow(std::mt19937& rng, Dist dist, int n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-3.0f, 5.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) {
    switch (dist) {
      case Dist::kNormal:
        v = normal(rng);
        break;
      case Dist::kUniform:
        v = uniform(rng);
        break;
      case Dist::kOutliers:  // About 1 in 16 elements is a 100x outlier.
        v = normal(rng) * (unit(rng) < 0.0625f ? 100.0f : 1.0f);
        break;
      case Dist::kPositive:
        v = 0.5f + std::fabs(normal(rng)) * 4.0f;
        break;
      case Dist::kNegative:
        v = -0.25f - std::fabs(normal(rng));
        break;
      case Dist::kSmall:  // Scales deep in f16's subnormal range.
        v = normal(rng) * 1e-6f;
        break;
      case Dist::kWide:  // Magnitudes over 2^-20 .. 2^12, mixed signs.
        v = (unit(rng) < 0.5f ? -1.0f : 1.0f) * std::exp2(-20.0f + 32.0f * unit(rng));
        break;
    }
  }
  if (x[0] == 0.0f) x[0] = 1.0f;  // Never all zeros.
  return x;
}

// Encoded row buffers, each followed by kCanary bytes that must stay untouched.
struct EncodedRow {
  static constexpr size_t kCanary = 64;
  static constexpr uint8_t kCanaryByte = 0xA5;
  KvDtype dtype;
  int n;
  std::vector<uint8_t> data;
  std::vector<uint8_t> scale;

  EncodedRow(KvDtype d, int len) : dtype(d), n(len) {
    const RowFormat f = RowFormatOf(d, len);
    data.assign(f.data_bytes + kCanary, kCanaryByte);
    scale.assign(f.scale_bytes + kCanary, kCanaryByte);
  }
  // nullptr when the format has no scale bytes, as production callers may pass.
  uint8_t* scale_ptr() { return scale.size() > kCanary ? scale.data() : nullptr; }
  const uint8_t* scale_ptr() const { return scale.size() > kCanary ? scale.data() : nullptr; }
  bool CanariesIntact() const {
    for (const auto* buf : {&data, &scale}) {
      for (size_t i = buf->size() - kCanary; i < buf->size(); ++i) {
        if ((*buf)[i] != kCanaryByte) return false;
      }
    }
    return true;
  }
};

inline EncodedRow EncodeWith(const RowCodecKernels& k, KvDtype dtype, const std::vector<float>& x) {
  EncodedRow row(dtype, static_cast<int>(x.size()));
  k.encode(dtype, x.data(), row.n, row.data.data(), row.scale_ptr());
  EXPECT_TRUE(row.CanariesIntact()) << k.target_name << " encode wrote past the row";
  return row;
}

inline std::vector<float> DecodeWith(const RowCodecKernels& k, const EncodedRow& row) {
  std::vector<float> out(static_cast<size_t>(row.n) + 1, 12345.0f);
  k.decode(row.dtype, row.data.data(), row.scale_ptr(), row.n, out.data());
  EXPECT_EQ(out.back(), 12345.0f) << k.target_name << " decode wrote past n";
  out.pop_back();
  return out;
}

}  // namespace kvengine::testing_util
