// Round trips of every KV format within the named error budgets (error_budget.h), for the scalar
// reference and for the default (SIMD) codecs, plus exact byte layouts and edge rows.
#include "quant/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "quant/codec_params.h"
#include "quant/codec_test_util.h"
#include "quant/error_budget.h"
#include "quant/half.h"

namespace kvengine {
namespace {

using namespace testing_util;  // NOLINT: the codec test helpers.

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<RowCodecKernels> RefAndDefault() {
  return {ReferenceRowCodecKernels(), DefaultRowCodecKernels()};
}

// The budget's amax and range: over the row, or over each int4 group.
struct ScaleContext {
  size_t group = 0;          // Elements per context (n, or the int4 group size).
  std::vector<float> amax;   // Per context: max |x| over finite elements.
  std::vector<float> range;  // Per context: max - min over finite elements.
};

ScaleContext ContextOf(KvDtype dtype, const std::vector<float>& x) {
  ScaleContext c;
  c.group = dtype == KvDtype::kInt4 ? static_cast<size_t>(Int4GroupSize(static_cast<int>(x.size())))
                                    : x.size();
  for (size_t begin = 0; begin < x.size(); begin += c.group) {
    float lo = kInf;
    float hi = -kInf;
    float amax = 0.0f;
    for (size_t j = begin; j < begin + c.group; ++j) {
      if (!std::isfinite(x[j])) continue;
      amax = std::max(amax, std::fabs(x[j]));
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    c.amax.push_back(amax);
    c.range.push_back(lo <= hi ? hi - lo : 0.0f);
  }
  return c;
}

// Encodes and decodes x; every finite element must come back within budget.
void ExpectWithinBudget(const RowCodecKernels& k, KvDtype dtype, const std::vector<float>& x) {
  const std::vector<float> y = DecodeWith(k, EncodeWith(k, dtype, x));
  const ErrorBudget budget = ErrorBudgetOf(dtype);
  const ScaleContext context = ContextOf(dtype, x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const float amax = context.amax[i / context.group];
    const float range = context.range[i / context.group];
    const float bound = budget.Bound(std::fabs(x[i]), amax, range);
    ASSERT_TRUE(std::isfinite(y[i])) << i;
    ASSERT_LE(std::fabs(y[i] - x[i]), bound)
        << k.target_name << " " << KvDtypeName(dtype) << " n=" << x.size() << " i=" << i
        << " x=" << x[i] << " y=" << y[i] << " amax=" << amax << " range=" << range;
  }
}

TEST(CodecTest, RandomRowsRoundTripWithinBudget) {
  std::mt19937 rng(42);
  for (const RowCodecKernels& k : RefAndDefault()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (int n : kRowLengths) {
        for (Dist dist : kAllDists) {
          SCOPED_TRACE(testing_util::DistName(dist));
          for (int rep = 0; rep < 3; ++rep) {
            ASSERT_NO_FATAL_FAILURE(
                ExpectWithinBudget(k, dtype, testing_util::RandomRow(rng, dist, n)));
          }
        }
      }
    }
  }
}

TEST(CodecTest, EdgeRowsRoundTripWithinBudget) {
  const std::vector<std::vector<float>> rows = {
      std::vector<float>(8, 3.7f),     std::vector<float>(33, -2.5f), std::vector<float>(5, 1e-3f),
      std::vector<float>(64, 1000.0f), std::vector<float>(1, -7.0f),  {-1.0f, -2.0f, -3.0f, -0.5f},
      {1e-30f, -1e-30f, 2e-30f},       {1e-9f, 3e-9f, -2e-9f, 0.0f},  {5e-8f, 6e-8f, 1e-7f},
      {0.0f, 0.0f, 0.0f, 1.0f},        {-0.0f, 1.0f, 2.0f},           {60000.0f, -65504.0f, 1.0f},
  };
  for (const RowCodecKernels& k : RefAndDefault()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (const auto& x : rows) ASSERT_NO_FATAL_FAILURE(ExpectWithinBudget(k, dtype, x));
    }
  }
}

TEST(CodecTest, AllZeroRowsDecodeToZeros) {
  for (const RowCodecKernels& k : RefAndDefault()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (int n : {1, 8, 31, 128}) {
        for (float zero : {0.0f, -0.0f}) {
          const std::vector<float> y =
              DecodeWith(k, EncodeWith(k, dtype, std::vector<float>(n, zero)));
          for (float v : y) ASSERT_EQ(v, 0.0f) << k.target_name << " " << KvDtypeName(dtype);
        }
      }
    }
  }
}

// Elements far beyond the format's range saturate to the largest representable value instead of
// producing inf or NaN (f16 is the exception: IEEE overflow to inf, documented in codec.h).
TEST(CodecTest, HugeValuesSaturate) {
  std::mt19937 rng(3);
  for (const RowCodecKernels& k : RefAndDefault()) {
    for (KvDtype dtype : kAllKvDtypes) {
      std::vector<float> x = testing_util::RandomRow(rng, Dist::kNormal, 16);
      x[3] = 1e30f;
      x[9] = -1e30f;
      const std::vector<float> y = DecodeWith(k, EncodeWith(k, dtype, x));
      if (dtype == KvDtype::kF16) {
        EXPECT_EQ(y[3], kInf);
        EXPECT_EQ(y[9], -kInf);
        continue;
      }
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << KvDtypeName(dtype);
      EXPECT_GT(y[3], 0.0f) << KvDtypeName(dtype);
      EXPECT_LT(y[9], 0.0f) << KvDtypeName(dtype);
      float top = 0.0f;
      if (dtype == KvDtype::kFp8E4M3) top = kFp8E4M3Max * kF16Max;
      if (dtype == KvDtype::kFp8E5M2) top = kFp8E5M2Max * kF16Max;
      if (dtype == KvDtype::kInt8) top = 127.0f * kF16Max;
      if (top > 0.0f) {
        EXPECT_EQ(y[3], top) << KvDtypeName(dtype);
        EXPECT_EQ(y[9], -top) << KvDtypeName(dtype);
      }
      if (dtype == KvDtype::kInt4) {
        EXPECT_EQ(y[9], -kF16Max);                 // The min saturates at -65504 ...
        EXPECT_EQ(y[3], -kF16Max + 15 * kF16Max);  // ... and the scale at 65504.
      }
    }
  }
}

TEST(CodecTest, NonFiniteInputsAreHandled) {
  const std::vector<float> x = {1.0f, -2.0f, kNaN, kInf, -kInf, 0.5f, 3.0f, -0.0f, 0.25f};
  for (const RowCodecKernels& k : RefAndDefault()) {
    for (KvDtype dtype : kAllKvDtypes) {
      SCOPED_TRACE(KvDtypeName(dtype));
      ASSERT_NO_FATAL_FAILURE(ExpectWithinBudget(k, dtype, x));  // Finite elements.
      const EncodedRow row = EncodeWith(k, dtype, x);
      const std::vector<float> y = DecodeWith(k, row);
      switch (dtype) {
        case KvDtype::kF32:
        case KvDtype::kF16:
        case KvDtype::kBF16:
          EXPECT_TRUE(std::isnan(y[2]));
          EXPECT_EQ(y[3], kInf);
          EXPECT_EQ(y[4], -kInf);
          break;
        case KvDtype::kFp8E4M3:
        case KvDtype::kFp8E5M2:  // NaN stays NaN; inf saturates at the scaled max (>= amax).
          EXPECT_TRUE(std::isnan(y[2]));
          EXPECT_GE(y[3], 3.0f);
          EXPECT_LE(y[4], -3.0f);
          break;
        case KvDtype::kInt8:  // No NaN code: NaN -> 0; inf -> +-127 * scale.
          EXPECT_EQ(y[2], 0.0f);
          EXPECT_GE(y[3], 3.0f);
          EXPECT_LE(y[4], -3.0f);
          break;
        case KvDtype::kInt4: {  // NaN -> code 0 (the group min); inf -> code 15.
          const auto p = quant_internal::LoadInt4Params(row.scale.data(), 0);
          EXPECT_EQ(y[2], p.min);
          EXPECT_EQ(y[3], p.min + 15 * p.scale);
          EXPECT_EQ(y[4], p.min);
          break;
        }
      }
      // Rows with nothing finite must not crash or leak inf/NaN into integer formats.
      const std::vector<float> junk = {kNaN, kInf, -kInf};
      const std::vector<float> z = DecodeWith(k, EncodeWith(k, dtype, junk));
      if (dtype == KvDtype::kInt8 || dtype == KvDtype::kInt4) {
        for (float v : z) EXPECT_EQ(v, 0.0f);
      }
    }
  }
}

TEST(CodecTest, ExactLayouts) {
  for (const RowCodecKernels& k : RefAndDefault()) {
    SCOPED_TRACE(k.target_name);
    // int8: amax 127 -> scale exactly 1.0 (f16 0x3C00); 63.5 rounds to even (64).
    EncodedRow r8 = EncodeWith(k, KvDtype::kInt8, {127.0f, -127.0f, 0.0f, 63.5f, 62.5f});
    EXPECT_EQ(std::vector<uint8_t>(r8.data.begin(), r8.data.begin() + 5),
              (std::vector<uint8_t>{0x7F, 0x81, 0x00, 0x40, 0x3E}));
    EXPECT_EQ(quant_internal::LoadU16(r8.scale.data()), 0x3C00);
    // int4: min 0, max 15 -> scale 1; element 2i low nibble, 2i+1 high nibble; odd n pads with 0.
    EncodedRow r4 = EncodeWith(k, KvDtype::kInt4, {0.0f, 15.0f, 5.0f, 10.0f, 7.0f});
    EXPECT_EQ(std::vector<uint8_t>(r4.data.begin(), r4.data.begin() + 3),
              (std::vector<uint8_t>{0xF0, 0xA5, 0x07}));
    EXPECT_EQ(quant_internal::LoadU16(r4.scale.data()), 0x3C00);      // scale 1.0
    EXPECT_EQ(quant_internal::LoadU16(r4.scale.data() + 2), 0x0000);  // min 0.0
    // fp8 e4m3: amax 448 -> scale 1.0; 1.0 = 0x38, 0.5 = 0x30.
    EncodedRow r8f = EncodeWith(k, KvDtype::kFp8E4M3, {448.0f, -1.0f, 0.5f});
    EXPECT_EQ(std::vector<uint8_t>(r8f.data.begin(), r8f.data.begin() + 3),
              (std::vector<uint8_t>{0x7E, 0xB8, 0x30}));
    EXPECT_EQ(quant_internal::LoadU16(r8f.scale.data()), 0x3C00);
    // Scales round up to f16: amax 100 -> 100/127 = 0.7874 -> the next f16 at or above it.
    EncodedRow rs = EncodeWith(k, KvDtype::kInt8, {100.0f, -3.0f});
    EXPECT_EQ(quant_internal::LoadU16(rs.scale.data()), F32ToF16RoundUp(100.0f / 127.0f));
    EXPECT_EQ(rs.data[0], 127);
  }
}

TEST(CodecTest, DotAndAxpyMatchTheDecodedRow) {
  std::mt19937 rng(5);
  const RowCodecKernels& k = DefaultRowCodecKernels();
  for (KvDtype dtype : kAllKvDtypes) {
    for (int n : kRowLengths) {
      const std::vector<float> x = testing_util::RandomRow(rng, Dist::kOutliers, n);
      const std::vector<float> q = testing_util::RandomRow(rng, Dist::kNormal, n);
      const EncodedRow row = EncodeWith(k, dtype, x);
      const std::vector<float> y = DecodeWith(k, row);
      double exact = 0.0;
      double magnitude = 0.0;
      for (int i = 0; i < n; ++i) {
        exact += static_cast<double>(y[i]) * q[i];
        magnitude += std::fabs(static_cast<double>(y[i]) * q[i]);
      }
      const float dot = DotRow(dtype, row.data.data(), row.scale_ptr(), q.data(), n);
      EXPECT_LE(std::fabs(dot - exact), kDotRowRelTolerance * (n + 1) * magnitude)
          << KvDtypeName(dtype) << " n=" << n;
      std::vector<float> acc = testing_util::RandomRow(rng, Dist::kNormal, n);
      const std::vector<float> acc0 = acc;
      AxpyRow(dtype, row.data.data(), row.scale_ptr(), -0.75f, n, acc.data());
      for (int i = 0; i < n; ++i) {
        const double want = acc0[i] + -0.75 * static_cast<double>(y[i]);
        ASSERT_LE(std::fabs(acc[i] - want),
                  kAxpyRowRelTolerance * (std::fabs(acc0[i]) + std::fabs(0.75f * y[i])))
            << KvDtypeName(dtype) << " n=" << n << " i=" << i;
      }
    }
  }
}

}  // namespace
}  // namespace kvengine
