// Quantized-activation dot products (quant_dot.h): the activation quantizers on hand-computed
// blocks, every compiled kernel's quant_dot against the scalar reference (bit for bit, random
// data), and the reference against exact arithmetic on inputs where quantization is lossless.
#include "kernels/quant_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernel_ref.h"
#include "kernels/kernel_target.h"
#include "kernels/kernels_test_util.h"
#include "quant/half.h"

namespace kvengine {
namespace {

using kernels_test::ColsFor;
using kernels_test::kMatMulTypes;
using kernels_test::RandomFloats;
using kernels_test::RandomWeights;
using kernels_test::SameFloat;
using kernels_test::TestWeights;

std::vector<uint8_t> Quantize(ActivationFormat format, const std::vector<float>& x) {
  const auto cols = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(ActivationRowBytes(format, cols));
  QuantizeActivations(format, x.data(), cols, q.data());
  return q;
}

float FloatAt(const std::vector<uint8_t>& bytes, size_t offset) {
  float v;
  std::memcpy(&v, bytes.data() + offset, sizeof(v));
  return v;
}

TEST(QuantizeActivationsTest, Q8_0RoundsHalfToEvenWithScaleOne) {
  // amax = 127: d = 1, id = 1, so codes are x rounded half to even.
  std::vector<float> x(64, 0.0f);
  x[0] = 127.0f;
  x[1] = -63.5f;  // -> -64 (even)
  x[2] = 0.5f;    // -> 0
  x[3] = 1.5f;    // -> 2
  x[4] = 2.5f;    // -> 2
  x[5] = -2.4f;   // -> -2
  // Block 1: all zero -> d = 0, codes 0.
  for (ActivationFormat format : {ActivationFormat::kQ8_0, ActivationFormat::kQ8_1}) {
    const std::vector<uint8_t> q = Quantize(format, x);
    ASSERT_EQ(q.size(), 64u + 4 * 4);
    const auto* codes = reinterpret_cast<const int8_t*>(q.data());
    const int8_t want[6] = {127, -64, 0, 2, 2, -2};
    for (int j = 0; j < 6; ++j) EXPECT_EQ(codes[j], want[j]) << j;
    for (int j = 6; j < 64; ++j) EXPECT_EQ(codes[j], 0) << j;
    EXPECT_EQ(FloatAt(q, 64), 1.0f);  // d of block 0.
    EXPECT_EQ(FloatAt(q, 68), 0.0f);  // d of block 1.
    const float s0 = FloatAt(q, 72);  // s of block 0: d * (127 - 64 + 2 + 2 - 2) = 65.
    EXPECT_EQ(s0, format == ActivationFormat::kQ8_1 ? 65.0f : 0.0f);
    EXPECT_EQ(FloatAt(q, 76), 0.0f);
  }
}

TEST(QuantizeActivationsTest, Q8_0ScaleIsRoundedToHalf) {
  std::vector<float> x(32, 0.0f);
  x[7] = -2.54f;  // amax; d = 2.54 / 127 = 0.02, stored as the nearest f16.
  x[8] = 1.27f;
  const std::vector<uint8_t> q = Quantize(ActivationFormat::kQ8_1, x);
  const auto* codes = reinterpret_cast<const int8_t*>(q.data());
  EXPECT_EQ(codes[7], -127);
  EXPECT_EQ(codes[8], 64);  // 1.27 * (127 / 2.54) = 63.5 (rounded up in float) -> 64.
  EXPECT_EQ(FloatAt(q, 32), F16ToF32(F32ToF16(2.54f / 127.0f)));
  EXPECT_NE(FloatAt(q, 32), 2.54f / 127.0f);  // 0.02 is not an f16.
  EXPECT_EQ(FloatAt(q, 36), F16ToF32(F32ToF16((2.54f / 127.0f) * -63.0f)));
}

TEST(QuantizeActivationsTest, NanActivationReachesTheOutput) {
  std::mt19937 rng(3);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_1, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    const WeightFormat format = *WeightFormatOf(type);
    const ActivationFormat af = *ActivationFormatOf(format);
    std::vector<float> x = RandomFloats(rng, 256);
    x[40] = std::nanf("");
    const std::vector<uint8_t> xq = Quantize(af, x);
    const TestWeights w = RandomWeights(rng, type, 1, 256);
    for (const KernelTable& k : AvailableKernelTables()) {
      float y = 0.0f;
      k.quant_dot(format, w.view.data, 256, xq.data(), xq.size(), 1, &y, 1);
      EXPECT_TRUE(std::isnan(y)) << k.target_name << " " << GgmlTypeName(type) << " " << y;
    }
  }
}

TEST(QuantizeActivationsTest, Q8KUsesSignedMaxAndBlockSums) {
  std::vector<float> x(512, 0.0f);
  // Block 0: the largest magnitude is negative (-2, first of the two of magnitude 2):
  // iscale = -127 / -2 = 63.5; 1 -> 63.5 -> 64 (even), 0.5 -> 31.75 -> 32, 2 -> 127.
  x[0] = -2.0f;
  x[1] = 1.0f;
  x[2] = 0.5f;
  x[3] = 2.0f;
  x[17] = 1.0f;  // bsums[1] = 64.
  // Block 1: positive max 4: iscale = -31.75, codes are negated; 1 -> -31.75 -> -32.
  x[256] = 4.0f;
  x[300] = 1.0f;
  const std::vector<uint8_t> q = Quantize(ActivationFormat::kQ8_K, x);
  ASSERT_EQ(q.size(), 2 * sizeof(Q8KBlock));
  Q8KBlock b[2];
  std::memcpy(b, q.data(), sizeof(b));
  EXPECT_EQ(b[0].d, 1.0f / 63.5f);
  EXPECT_EQ(b[0].qs[0], -127);
  EXPECT_EQ(b[0].qs[1], 64);
  EXPECT_EQ(b[0].qs[2], 32);
  EXPECT_EQ(b[0].qs[3], 127);
  EXPECT_EQ(b[0].qs[17], 64);
  EXPECT_EQ(b[0].bsums[0], -127 + 64 + 32 + 127);
  EXPECT_EQ(b[0].bsums[1], 64);
  for (int k = 2; k < 16; ++k) EXPECT_EQ(b[0].bsums[k], 0);
  EXPECT_EQ(b[1].d, 1.0f / -31.75f);
  EXPECT_EQ(b[1].qs[0], -127);
  EXPECT_EQ(b[1].qs[44], -32);
  EXPECT_EQ(b[1].bsums[0], -127);
  EXPECT_EQ(b[1].bsums[2], -32);
  // An all-zero block: d = 0 and zero codes.
  const std::vector<uint8_t> z = Quantize(ActivationFormat::kQ8_K, std::vector<float>(256, 0.0f));
  Q8KBlock zb;
  std::memcpy(&zb, z.data(), sizeof(zb));
  EXPECT_EQ(zb.d, 0.0f);
  for (int j = 0; j < 256; ++j) ASSERT_EQ(zb.qs[j], 0);
}

// Every kernel table's quant_dot equals the reference bit for bit on random weights (arbitrary
// codes, scales of both signs) and random activations.
TEST(QuantDotTest, EveryTargetBitIdenticalToReference) {
  std::mt19937 rng(17);
  for (GgmlType type : kMatMulTypes) {
    const WeightFormat format = *WeightFormatOf(type);
    const std::optional<ActivationFormat> af = ActivationFormatOf(format);
    if (!af.has_value()) continue;
    std::vector<int64_t> cols_list = ColsFor(type);
    cols_list.push_back(kernels_test::BlockElements(type) * 9);  // A partial group of 8 blocks.
    for (int64_t cols : cols_list) {
      const TestWeights w = RandomWeights(rng, type, 4, cols);
      // 11 tokens: one full chunk of 8 and a partial one; the last token at a small scale.
      constexpr int64_t kTokens = 11;
      const size_t stride = ActivationRowBytes(*af, cols);
      std::vector<uint8_t> xq(stride * kTokens);
      for (int64_t t = 0; t < kTokens; ++t) {
        const std::vector<float> x =
            RandomFloats(rng, static_cast<size_t>(cols), t == kTokens - 1 ? 1e-3f : 1.0f);
        QuantizeActivations(*af, x.data(), cols, xq.data() + t * stride);
      }
      for (int64_t r = 0; r < 4; ++r) {
        const uint8_t* row = w.view.data + r * w.view.row_bytes;
        for (const KernelTable& k : AvailableKernelTables()) {
          for (int64_t n : {int64_t{1}, kTokens}) {
            std::vector<float> got(static_cast<size_t>(2 * n), -1.0f);
            k.quant_dot(format, row, cols, xq.data(), stride, n, got.data(), 2);
            for (int64_t t = 0; t < n; ++t) {
              const float want = kernels_ref::QuantDot(format, row, xq.data() + t * stride, cols);
              ASSERT_TRUE(SameFloat(got[2 * t], want))
                  << k.target_name << " " << GgmlTypeName(type) << " cols=" << cols << " row " << r
                  << " token " << t << " of " << n;
              ASSERT_EQ(got[2 * t + 1], -1.0f) << "wrote outside y_stride";
            }
          }
        }
      }
    }
  }
}

// Integer weights (weight_blocks.h, d = 1) and integer activations with 127 in every 32-element
// block quantize without loss (q8 d = +-1), and every product and sum is an exact float: the
// quantized dot must equal the exact dot of the decoded weights with x.
TEST(QuantDotTest, ReferenceExactOnLosslessInputs) {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> small(-8, 8);
  for (GgmlType type : kMatMulTypes) {
    const WeightFormat format = *WeightFormatOf(type);
    const std::optional<ActivationFormat> af = ActivationFormatOf(format);
    if (!af.has_value()) continue;
    for (int64_t cols : {int64_t{256}, int64_t{768}}) {
      const TestWeights w = RandomWeights(rng, type, 3, cols, /*integers=*/true);
      std::vector<float> x(static_cast<size_t>(cols));
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = i % 32 == 5 ? 127.0f : static_cast<float>(small(rng));
      }
      const std::vector<uint8_t> xq = Quantize(*af, x);
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < 3; ++r) {
        const uint8_t* p = w.view.data + r * w.view.row_bytes;
        kernels_ref::DequantizeRow(type, p, cols, row.data());
        double exact = 0.0;
        for (int64_t c = 0; c < cols; ++c) exact += static_cast<double>(row[c]) * x[c];
        ASSERT_EQ(kernels_ref::QuantDot(format, p, xq.data(), cols), exact)
            << GgmlTypeName(type) << " cols=" << cols << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace kvengine
