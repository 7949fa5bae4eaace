#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "quant/half.h"
#include "synth/synthetic_vocab.h"
#include "quant/weight_encode.h"
#include "synth/weight_fill.h"
#include "quant/weight_quantize.h"

namespace kvengine {
namespace {

// Q8_0 error per element: half a step (d / 2) from rounding to an integer, plus up to 127 steps'
// worth of the f16 rounding of d (relative 2^-11): d * (0.5 + 127 * 2^-11) < 0.57 d.
constexpr float kQ8_0StepFraction = 0.57f;
// f16 / bf16 round to nearest: relative error at most 2^-11 / 2^-8 for normal values.
constexpr float kF16RelError = 0x1p-11f;
constexpr float kBf16RelError = 0x1p-8f;

std::vector<float> RandomValues(size_t n, float scale, uint64_t key) {
  std::vector<float> v(n);
  FillUniform(key, 0, scale, v);
  return v;
}

TEST(WeightEncodeTest, Q8_0RoundTripErrorIsBoundedPerBlock) {
  std::vector<float> x = RandomValues(32 * 64, 3.0f, 7);
  for (size_t i = 0; i < 32; ++i) x[i] = 0.0f;  // An all-zero block: d = 0, exact.
  x[40] = 100.0f;                               // A block with an outlier.
  std::vector<uint8_t> q(EncodedWeightBytes(GgmlType::kQ8_0, x.size()));
  ASSERT_EQ(q.size(), 64u * 34u);
  EncodeWeights(GgmlType::kQ8_0, x, q);
  std::vector<float> y(x.size());
  DecodeWeights(GgmlType::kQ8_0, q, y);
  for (size_t b = 0; b < 64; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.0f;
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = b * 32 + j;
      ASSERT_LE(std::fabs(x[i] - y[i]), kQ8_0StepFraction * d) << "element " << i;
    }
  }
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.0f);
  EXPECT_NEAR(y[40], 100.0f, 100.0f * kF16RelError);  // The block maximum maps to q = 127.
}

TEST(WeightEncodeTest, HalfFormatsRoundTripWithinTheirPrecision) {
  const std::vector<float> x = RandomValues(4096, 0.25f, 11);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    std::vector<uint8_t> bytes(EncodedWeightBytes(type, x.size()));
    EncodeWeights(type, x, bytes);
    std::vector<float> y(x.size());
    DecodeWeights(type, bytes, y);
    const float rel = type == GgmlType::kF32   ? 0.0f
                      : type == GgmlType::kF16 ? kF16RelError
                                               : kBf16RelError;
    for (size_t i = 0; i < x.size(); ++i) {
      // Values below f16's normal range are rounded to its subnormal step instead.
      ASSERT_LE(std::fabs(x[i] - y[i]), rel * std::fabs(x[i]) + (rel > 0 ? kF16MinSubnormal : 0))
          << GgmlTypeName(type) << " element " << i;
    }
  }
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kF16, 10), 20u);
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ8_0, 64), 68u);
}

// The block types go through QuantizeBlocks (weight_quantize_test.cc tests it against the
// kernels' decoders); here: EncodeWeights' sizes and dispatch, and a chunk of a tensor encodes as
// the same bytes whichever way the tensor is cut into whole blocks.
TEST(WeightEncodeTest, BlockTypesEncodeThroughTheQuantizers) {
  const std::vector<float> x = RandomValues(1024, 0.1f, 13);
  const GgmlType types[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                            GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  for (GgmlType type : types) {
    SCOPED_TRACE(GgmlTypeName(type));
    EXPECT_TRUE(IsEncodableWeightType(type));
    const uint64_t bytes = EncodedWeightBytes(type, x.size());
    EXPECT_EQ(bytes, *GgmlRowBytes(type, x.size()));
    std::vector<uint8_t> encoded(bytes), direct(bytes);
    EncodeWeights(type, x, encoded);
    QuantizeBlocks(type, x, direct);
    EXPECT_EQ(encoded, direct);
    const size_t half = x.size() / 2;  // 512: whole blocks of 32 and of 256.
    std::vector<uint8_t> second(EncodedWeightBytes(type, half));
    EncodeWeights(type, std::span<const float>(x).subspan(half), second);
    EXPECT_TRUE(std::equal(second.begin(), second.end(), encoded.begin() + bytes / 2));
  }
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ5_1, 64), 48u);
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ4_K, 256), 144u);
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ5_K, 512), 352u);
  EXPECT_EQ(EncodedWeightBytes(GgmlType::kQ6_K, 256), 210u);
  EXPECT_FALSE(IsEncodableWeightType(GgmlType::kQ2_K));
  EXPECT_FALSE(IsEncodableWeightType(GgmlType::kIQ4_NL));
}

TEST(WeightFillTest, UniformIsDeterministicChunkIndependentAndInRange) {
  const uint64_t key = SynthTensorKey(3, "blk.0.attn_q.weight");
  EXPECT_EQ(key, SynthTensorKey(3, "blk.0.attn_q.weight"));
  EXPECT_NE(key, SynthTensorKey(4, "blk.0.attn_q.weight"));
  EXPECT_NE(key, SynthTensorKey(3, "blk.0.attn_k.weight"));

  const float scale = SynthMatrixScale(64);
  std::vector<float> whole(10000);
  FillUniform(key, 0, scale, whole);
  std::vector<float> tail(3000);
  FillUniform(key, 7000, scale, tail);  // The same elements, generated from the middle.
  for (size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(tail[i], whole[7000 + i]);

  double sum = 0, sum_sq = 0;
  for (float v : whole) {
    ASSERT_GE(v, -scale);
    ASSERT_LT(v, scale);
    sum += v;
    sum_sq += double{v} * v;
  }
  // Uniform in +-scale: mean 0, standard deviation scale / sqrt(3) = 0.5 / sqrt(fan_in).
  const double n = static_cast<double>(whole.size());
  EXPECT_NEAR(sum / n, 0.0, 0.05 * scale);
  EXPECT_NEAR(std::sqrt(sum_sq / n), 0.5 / std::sqrt(64.0), 0.02 * 0.5 / 8.0);
}

TEST(SyntheticVocabTest, LayoutIsSentencePieceStyle) {
  for (int n : {260, 512, 32000}) {
    const SyntheticVocab v = MakeSyntheticVocab(n);
    ASSERT_EQ(v.tokens.size(), static_cast<size_t>(n));
    ASSERT_EQ(v.scores.size(), static_cast<size_t>(n));
    ASSERT_EQ(v.types.size(), static_cast<size_t>(n));
    EXPECT_EQ(v.tokens[kSynthUnkId], "<unk>");
    EXPECT_EQ(v.types[kSynthUnkId], kTokenTypeUnknown);
    EXPECT_EQ(v.tokens[kSynthBosId], "<s>");
    EXPECT_EQ(v.types[kSynthBosId], kTokenTypeControl);
    EXPECT_EQ(v.tokens[kSynthEosId], "</s>");
    EXPECT_EQ(v.types[kSynthEosId], kTokenTypeControl);
    EXPECT_EQ(v.tokens[kSynthFirstByteId], "<0x00>");
    EXPECT_EQ(v.tokens[kSynthFirstByteId + 0x41], "<0x41>");
    EXPECT_EQ(v.tokens[kSynthFirstByteId + 255], "<0xFF>");
    for (uint32_t b = 0; b < 256; ++b) EXPECT_EQ(v.types[kSynthFirstByteId + b], kTokenTypeByte);
    EXPECT_EQ(v.tokens[kSynthFirstPieceId], "\xE2\x96\x81");
    std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
    EXPECT_EQ(unique.size(), v.tokens.size());
    for (size_t i = kSynthFirstPieceId; i < v.tokens.size(); ++i) {
      ASSERT_EQ(v.types[i], kTokenTypeNormal);
      if (i > kSynthFirstPieceId) {
        ASSERT_LT(v.scores[i], v.scores[i - 1]);
      }
      // Every multi-character piece can be reached by merging: its prefix without the last
      // byte is a piece (or a lone "▁", also a piece).
      const std::string& t = v.tokens[i];
      if (t.size() > 1 && t != "\xE2\x96\x81") {
        ASSERT_TRUE(unique.count(t.substr(0, t.size() - 1))) << t;
      }
    }
  }
  const SyntheticVocab big = MakeSyntheticVocab(32000);
  std::set<std::string> pieces(big.tokens.begin(), big.tokens.end());
  EXPECT_TRUE(pieces.count("\xE2\x96\x81the"));
  EXPECT_TRUE(
      pieces.count("\xE2\x96\x81"
                   "once"));
  EXPECT_TRUE(pieces.count("ing"));
  EXPECT_TRUE(pieces.count("zz"));
  EXPECT_TRUE(pieces.count("\xE2\x96\x81zz"));
}

}  // namespace
}  // namespace kvengine
