// Every compiled SIMD target against the scalar reference: encodings bit for bit, decodes bit for
// bit (NaN as NaN), DotRow / AxpyRow within the named tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <tuple>

#include "quant/codec.h"
#include "quant/codec_test_util.h"
#include "quant/error_budget.h"
#include "quant/half.h"

namespace kvengine {
namespace {

using namespace testing_util;  // NOLINT: the codec test helpers.

constexpr float kInfinity = std::numeric_limits<float>::infinity();

const RowCodecKernels kRef = ReferenceRowCodecKernels();

// Same float, bit for bit (-0 differs from +0); any NaN equals any NaN unless exact_nan.
void ExpectSameFloats(const std::vector<float>& want, const std::vector<float>& got,
                      bool exact_nan = false) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (!exact_nan && std::isnan(want[i]) && std::isnan(got[i])) continue;
    ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
        << "i=" << i << " want " << want[i] << " got " << got[i];
  }
}

// Encode equal to the reference (data, scales and the canaries after them), decode equal too.
void ExpectMatchesReference(const RowCodecKernels& k, KvDtype dtype, const std::vector<float>& x) {
  const EncodedRow want = EncodeWith(kRef, dtype, x);
  const EncodedRow got = EncodeWith(k, dtype, x);
  for (const auto& [w, g, what] :
       {std::tuple(&want.data, &got.data, "data"), std::tuple(&want.scale, &got.scale, "scale")}) {
    const auto diff = std::mismatch(w->begin(), w->end(), g->begin());
    ASSERT_TRUE(diff.first == w->end())
        << k.target_name << " " << KvDtypeName(dtype) << " n=" << x.size() << ": " << what
        << " byte " << (diff.first - w->begin()) << " is " << int{*diff.second} << ", reference "
        << int{*diff.first};
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameFloats(DecodeWith(kRef, want), DecodeWith(k, want)));
}

TEST(CodecSimdTest, ListsTargets) {
  const std::vector<RowCodecKernels> all = AvailableRowCodecKernels();
  ASSERT_FALSE(all.empty());
  bool has_default = false;
  std::cout << "codec targets:";
  for (const RowCodecKernels& k : all) {
    std::cout << " " << k.target_name;
    has_default |= k.hwy_target == DefaultRowCodecKernels().hwy_target;
    EXPECT_NE(k.encode, nullptr);
  }
  std::cout << " (default " << DefaultRowCodecKernels().target_name << ")\n";
  EXPECT_TRUE(has_default);
}

TEST(CodecSimdTest, RandomRowsMatchReference) {
  std::mt19937 rng(1234);
  for (const RowCodecKernels& k : AvailableRowCodecKernels()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (int n : kRowLengths) {
        for (Dist dist : kAllDists) {
          SCOPED_TRACE(testing_util::DistName(dist));
          ASSERT_NO_FATAL_FAILURE(
              ExpectMatchesReference(k, dtype, testing_util::RandomRow(rng, dist, n)));
        }
      }
    }
  }
}

// Values that stress rounding: NaNs with payloads, infinities, signed zeros, float and f16
// subnormals, f16 / bf16 / fp8 ties, overflow thresholds. The row's amax is the format's max, so
// fp8 rows get scale 1.0 and the raw fp8 rounding is exercised.
std::vector<float> SpecialRow(float amax) {
  std::vector<float> x = {amax,
                          -amax,
                          0.0f,
                          -0.0f,
                          kInfinity,
                          -kInfinity,
                          std::bit_cast<float>(0x7F800001u),
                          std::bit_cast<float>(0xFFA02000u),
                          std::bit_cast<float>(0x7FC00000u),
                          std::numeric_limits<float>::denorm_min(),
                          -1e-40f,
                          0x1p-25f,
                          0x1.8p-24f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          70000.0f,
                          1.0f + 0x1p-11f,
                          1.0f + 0x3p-11f,
                          1.0f + 0x1p-8f,
                          1.0f + 0x3p-8f,
                          1.0625f,
                          1.1875f,
                          1.125f,
                          1.375f,
                          0x1p-10f,
                          0x3p-10f,
                          0x1p-17f,
                          0x3p-17f,
                          464.0f,
                          61440.0f,
                          -0.3f,
                          5.5f,
                          2.5f,
                          -2.5f};
  std::mt19937 rng(9);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 60; ++i) {  // Arbitrary bit patterns, clipped to the row's amax.
    const float v = std::bit_cast<float>(any_bits(rng));
    x.push_back(std::isfinite(v) && std::fabs(v) > amax ? std::copysign(amax, v) : v);
  }
  return x;
}

TEST(CodecSimdTest, SpecialValuesMatchReference) {
  for (const RowCodecKernels& k : AvailableRowCodecKernels()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (float amax : {kFp8E4M3Max, kFp8E5M2Max, 127.0f, 1.0f}) {
        std::vector<float> x = SpecialRow(amax);
        // Every prefix length, so each value also lands in a vector tail.
        for (size_t n = 1; n <= x.size(); n += (n < 40 ? 1 : 7)) {
          ASSERT_NO_FATAL_FAILURE(
              ExpectMatchesReference(k, dtype, std::vector<float>(x.begin(), x.begin() + n)));
        }
      }
    }
  }
}

// Decoding arbitrary bytes (every f16 / bf16 / fp8 code, random scales including NaN and inf)
// gives the reference's floats; f16 and fp8 NaNs even keep the reference's exact bits.
TEST(CodecSimdTest, ArbitraryBytesDecodeLikeReference) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const RowCodecKernels& k : AvailableRowCodecKernels()) {
    SCOPED_TRACE(k.target_name);
    for (KvDtype dtype : {KvDtype::kF16, KvDtype::kBF16}) {
      EncodedRow row(dtype, 65536);
      for (uint32_t c = 0; c < 65536; ++c) std::memcpy(&row.data[2 * c], &c, 2);
      ASSERT_NO_FATAL_FAILURE(ExpectSameFloats(DecodeWith(kRef, row), DecodeWith(k, row), true));
    }
    for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2, KvDtype::kInt8}) {
      EncodedRow row(dtype, 256);
      for (int c = 0; c < 256; ++c) row.data[c] = static_cast<uint8_t>(c);
      row.scale[0] = 0x00;  // Scale 1.0 (f16 0x3C00, little-endian).
      row.scale[1] = 0x3C;
      ASSERT_NO_FATAL_FAILURE(ExpectSameFloats(DecodeWith(kRef, row), DecodeWith(k, row), true));
    }
    for (KvDtype dtype : kAllKvDtypes) {
      for (int n : kRowLengths) {
        EncodedRow row(dtype, n);
        for (auto* buf : {&row.data, &row.scale}) {
          for (size_t i = 0; i + EncodedRow::kCanary < buf->size(); ++i) {
            (*buf)[i] = static_cast<uint8_t>(byte(rng));
          }
        }
        ASSERT_NO_FATAL_FAILURE(ExpectSameFloats(DecodeWith(kRef, row), DecodeWith(k, row)));
      }
    }
  }
}

TEST(CodecSimdTest, DotAndAxpyMatchReference) {
  std::mt19937 rng(99);
  for (const RowCodecKernels& k : AvailableRowCodecKernels()) {
    for (KvDtype dtype : kAllKvDtypes) {
      for (int n : kRowLengths) {
        for (Dist dist : {Dist::kNormal, Dist::kOutliers, Dist::kNegative, Dist::kWide}) {
          const std::vector<float> x = testing_util::RandomRow(rng, dist, n);
          const std::vector<float> q = testing_util::RandomRow(rng, Dist::kNormal, n);
          const EncodedRow row = EncodeWith(kRef, dtype, x);
          const std::vector<float> y = DecodeWith(kRef, row);
          double magnitude = 0.0;
          for (int i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(y[i]) * q[i]);
          const float want = kRef.dot(dtype, row.data.data(), row.scale_ptr(), q.data(), n);
          const float got = k.dot(dtype, row.data.data(), row.scale_ptr(), q.data(), n);
          ASSERT_LE(std::fabs(got - want), kDotRowRelTolerance * (n + 1) * magnitude)
              << k.target_name << " " << KvDtypeName(dtype) << " n=" << n;

          const float a = 0.375f;
          std::vector<float> acc_want = testing_util::RandomRow(rng, Dist::kNormal, n);
          acc_want.push_back(-1.0f);  // Sentinel: must stay untouched.
          std::vector<float> acc_got = acc_want;
          kRef.axpy(dtype, row.data.data(), row.scale_ptr(), a, n, acc_want.data());
          k.axpy(dtype, row.data.data(), row.scale_ptr(), a, n, acc_got.data());
          ASSERT_EQ(acc_got.back(), -1.0f) << k.target_name << " axpy wrote past n";
          for (int i = 0; i < n; ++i) {
            const float tol = kAxpyRowRelTolerance * (std::fabs(acc_want[i]) + std::fabs(a * y[i]));
            ASSERT_LE(std::fabs(acc_got[i] - acc_want[i]), tol)
                << k.target_name << " " << KvDtypeName(dtype) << " n=" << n << " i=" << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvengine
