// The bf16 steps of fp8 attention (attention_bf16.h): the AVX-512 BF16 implementation, where this
// CPU runs it, against the scalar specification on random fp8 KV (every finite code), queries,
// softmax weights and accumulators, for 1-4 heads, head dims 64-512, chunks of 1-64 rows, paged
// and shuffled rows; the specification's own rules (element orders, bf16 rounding, every code's
// value); and NaN and infinite codes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_bf16.h"
#include "kernels/attention/attention_test_util.h"
#include "quant/half.h"

namespace kvengine {
namespace {

using attention_test::ChunkRows;
using attention_test::KvShape;
using attention_test::MakeKv;
using attention_test::OwnedKv;
using attention_test::RowsOf;

constexpr KvDtype kFormats[] = {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2};

float ValueOf(KvDtype dtype, uint8_t code) {
  return dtype == KvDtype::kFp8E4M3 ? Fp8E4M3ToF32(code) : Fp8E5M2ToF32(code);
}

float ScaleAt(const uint8_t* p) { return F16ToF32(uint16_t(p[0] | (p[1] << 8))); }

bool Finite(KvDtype dtype, uint8_t code) { return std::isfinite(ValueOf(dtype, code)); }

TEST(AttentionBf16Test, ElementOrdersArePermutations) {
  for (size_t d : {64, 128, 512}) {
    EXPECT_TRUE(attention_test::IsPermutation(&Fp8Bf16Element, d)) << d;
    EXPECT_TRUE(attention_test::IsPermutation(&Fp8Bf16KElement, d)) << d;
  }
  // V: vector k of a run of 64 holds elements 16L + 4k + e in lanes 4L + e.
  EXPECT_EQ(Fp8Bf16Element(0), 0u);
  EXPECT_EQ(Fp8Bf16Element(4), 16u);
  EXPECT_EQ(Fp8Bf16Element(16), 4u);
  EXPECT_EQ(Fp8Bf16Element(63), 48u + 12u + 3u);
  EXPECT_EQ(Fp8Bf16Element(64 + 17), 64u + 5u);
  // K: words 8L + e of vector w hold elements 16L + 8w + e.
  EXPECT_EQ(Fp8Bf16KElement(8), 16u);
  EXPECT_EQ(Fp8Bf16KElement(32), 8u);
  EXPECT_EQ(Fp8Bf16KElement(63), 63u);
}

TEST(AttentionBf16Test, Bf16RoundsToNearestEven) {
  EXPECT_EQ(Bf16(1.0f), 0x3F80);
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // Tie, even below.
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // Tie, even above.
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(Bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // Rounds up to infinity.
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x00400000u)), 0x0000);  // Subnormal: zero.
  EXPECT_EQ(Bf16(std::bit_cast<float>(0x80400000u)), 0x8000);
  EXPECT_TRUE(std::isnan(Bf16ToF32(Bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(Bf16ToF32(Bf16(std::bit_cast<float>(0x7F800001u)))));  // Stays NaN.
}

// The SIMD steps' query encoding (vcvtne2ps2bf16) gives Fp8Bf16QuantizeQuery's bits: Bf16's model
// of the instruction (ties to even, subnormals to zero, NaN quieted) on random values and on the
// cases themselves.
TEST(AttentionBf16Test, QuantizeQueryMatchesSpecification) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<uint32_t> bits;
  for (KvDtype dtype : kFormats) {
    const LowPrecisionSteps* steps = Fp8StepsAvx512Bf16(dtype);
    if (steps == nullptr) GTEST_SKIP() << "no AVX-512 BF16 steps on this CPU";
    for (size_t d : {64, 128, 512}) {
      std::vector<float> q(d);
      for (size_t i = 0; i < d; ++i) {
        q[i] = i % 3 == 0 ? std::bit_cast<float>(bits(rng)) : nd(rng) * 100.0f;  // Any bits.
      }
      const float cases[] = {std::bit_cast<float>(0x3F808000u),  // Ties.
                             std::bit_cast<float>(0x3F818000u),
                             std::bit_cast<float>(0x00400000u),  // Subnormals.
                             std::bit_cast<float>(0x80000001u),
                             std::bit_cast<float>(0x7F7FFFFFu),  // Rounds to infinity.
                             std::numeric_limits<float>::infinity(),
                             std::bit_cast<float>(0x7F800001u),  // Signalling NaN.
                             -std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f};
      for (size_t i = 0; i < std::size(cases); ++i) q[6 * i + 1] = cases[i];  // < 64.
      std::vector<int16_t> want(d), got(d);
      float want_scale = 0, got_scale = 0;
      Fp8Bf16QuantizeQuery(q.data(), d, want.data(), &want_scale);
      steps->quantize_query(q.data(), d, got.data(), &got_scale);
      for (size_t i = 0; i < d; ++i) {
        EXPECT_EQ(uint16_t(got[i]), uint16_t(want[i]))
            << "d=" << d << " i=" << i << " q=" << std::hex
            << std::bit_cast<uint32_t>(q[Fp8Bf16KElement(i)]);
      }
      EXPECT_EQ(got_scale, want_scale);
    }
  }
}

// Every fp8 value is a normal bf16 (or zero, inf, NaN): the steps' decode tables lose nothing.
TEST(AttentionBf16Test, EveryFp8CodeIsExactInBf16) {
  for (KvDtype dtype : kFormats) {
    for (int c = 0; c < 256; ++c) {
      const float v = ValueOf(dtype, uint8_t(c));
      const float b = Bf16ToF32(Bf16(v));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(b)) << c;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(b), std::bit_cast<uint32_t>(v)) << c;
        EXPECT_TRUE(v == 0.0f || std::fabs(v) >= std::numeric_limits<float>::min()) << c;
      }
    }
  }
}

// Random finite codes (every one of them, in both signs) in every K and V row of kv's pool.
void FillRandomCodes(OwnedKv* kv, KvDtype dtype, std::mt19937* rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  const KvLayerView& v = kv->view;
  const auto random_code = [&] {
    int c;
    do {
      c = byte(*rng);
    } while (!Finite(dtype, uint8_t(c)));
    return uint8_t(c);
  };
  for (int32_t b : kv->table) {
    uint8_t* block = kv->pool.data() + size_t(b) * v.bytes_per_block;
    for (size_t row = 0; row < size_t(v.num_kv_heads) * size_t(v.block_size); ++row) {
      for (size_t e = 0; e < v.k_row_bytes; ++e)
        block[v.k_data + row * v.k_row_bytes + e] = random_code();
      for (size_t e = 0; e < v.v_row_bytes; ++e)
        block[v.v_data + row * v.v_row_bytes + e] = random_code();
    }
  }
}

// |got - want| within f32 sums' rounding: 64 x 2^-24 of the terms' magnitude.
void ExpectClose(float got, double want, double magnitude, const std::string& what) {
  const double tol = 64.0 * std::ldexp(1.0, -24) * magnitude + 1e-30;
  ASSERT_LE(std::fabs(double(got) - want), tol)
      << what << " got " << got << " want " << want << " magnitude " << magnitude;
}

void CheckChunk(const LowPrecisionSteps& steps, const LowPrecisionSteps& spec, KvDtype dtype,
                const OwnedKv& kv, int heads, const ChunkRows& c, int n, std::mt19937* rng) {
  const size_t dk = size_t(kv.view.head_dim_k), dv = size_t(kv.view.head_dim_v);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<int16_t> q16(size_t(heads) * dk);
  std::vector<float> q_scale(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) {
    std::vector<float> q(dk);
    for (float& x : q) x = nd(*rng);
    steps.quantize_query(q.data(), dk, q16.data() + size_t(h) * dk, &q_scale[size_t(h)]);
  }
  KvPrefetch pf;  // Another chunk's rows to prefetch (speed only).
  pf.rows = c.rows.data();
  pf.n = n;
  pf.k_bytes = kv.view.k_row_bytes;
  pf.v_bytes = kv.view.v_row_bytes;
  std::vector<float> want(size_t(heads) * kAttentionChunk, 0.0f), got(want.size(), 0.0f);
  spec.scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk, want.data(),
              KvPrefetch{});
  steps.scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk, got.data(),
               pf);
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t) {
      double magnitude = 0;
      for (size_t i = 0; i < dk; ++i) {
        magnitude += std::fabs(double(Bf16ToF32(uint16_t(q16[size_t(h) * dk + i]))) *
                               ValueOf(dtype, c.rows[size_t(t)].k_data[Fp8Bf16KElement(i)]));
      }
      magnitude *= std::fabs(ScaleAt(c.rows[size_t(t)].k_scale));
      const size_t i = size_t(h) * kAttentionChunk + size_t(t);
      ExpectClose(got[i], want[i], magnitude,
                  "score h=" + std::to_string(h) + " t=" + std::to_string(t));
    }
  }
  const attention_test::ValueStepInputs in =
      attention_test::RandomValueStepInputs(heads, n, dv, rng);
  const std::vector<float>& p = in.p;
  const std::vector<float>& alpha = in.alpha;
  const size_t stride = in.stride;
  std::vector<float> acc_want = in.acc;
  const std::vector<float>& acc_before = in.acc;
  std::vector<float> acc_got = acc_want;
  std::vector<float> l_want(size_t(heads), 3.0f), l_got = l_want;
  spec.accumulate(c.rows.data(), n, c.run_starts, p.data(), alpha.data(), heads, dv,
                  acc_want.data(), stride, l_want.data());
  steps.accumulate(c.rows.data(), n, c.run_starts, p.data(), alpha.data(), heads, dv,
                   acc_got.data(), stride, l_got.data());
  for (int h = 0; h < heads; ++h) {
    // l moved by the weights' rounding: at most 2^-9 of each p_t, and by the same amount in both.
    double p_sum = 3.0;
    for (int t = 0; t < n; ++t) p_sum += p[size_t(h) * kAttentionChunk + size_t(t)];
    EXPECT_LE(std::fabs(double(l_want[size_t(h)]) - 3.0), std::ldexp(p_sum, -9));
    ExpectClose(l_got[size_t(h)], l_want[size_t(h)], p_sum, "l h=" + std::to_string(h));
  }
  for (int h = 0; h < heads; ++h) {
    for (size_t i = 0; i < dv; ++i) {
      const size_t a = size_t(h) * stride + i;
      double magnitude = std::fabs(double(acc_before[a]) * alpha[size_t(h)]);
      for (int t = 0; t < n; ++t) {
        const KvRowRefs& r = c.rows[size_t(t)];
        const float w = p[size_t(h) * kAttentionChunk + size_t(t)] * ScaleAt(r.v_scale);
        magnitude += std::fabs(double(w)) * std::fabs(ValueOf(dtype, r.v_data[Fp8Bf16Element(i)]));
      }
      ExpectClose(acc_got[a], acc_want[a], magnitude,
                  "acc h=" + std::to_string(h) + " i=" + std::to_string(i));
    }
  }
}

TEST(AttentionBf16Test, StepsMatchSpecification) {
  std::mt19937 rng(3);
  int checked = 0;
  for (KvDtype dtype : kFormats) {
    const LowPrecisionSteps* steps = Fp8StepsAvx512Bf16(dtype);
    if (steps == nullptr) GTEST_SKIP() << "no AVX-512 BF16 steps on this CPU";
    for (int d : {64, 128, 512}) {
      KvShape s;
      s.k_dtype = s.v_dtype = dtype;
      s.num_kv_heads = 2;
      s.head_dim_k = s.head_dim_v = d;
      s.block_size = 16;
      OwnedKv kv = MakeKv(s, 300, uint32_t(d));
      ASSERT_TRUE(Fp8Bf16Applies(kv.view));
      FillRandomCodes(&kv, dtype, &rng);
      for (int heads = 1; heads <= 4; ++heads) {
        for (int n : {1, 2, 7, 8, 9, 33, 64}) {
          for (bool shuffled : {false, true}) {
            SCOPED_TRACE(std::string(KvDtypeName(dtype)) + " d=" + std::to_string(d) +
                         " heads=" + std::to_string(heads) + " n=" + std::to_string(n) +
                         (shuffled ? " shuffled" : " paged"));
            const ChunkRows c = RowsOf(kv, heads % 2, 5 + n, n, shuffled, &rng);
            CheckChunk(*steps, Fp8Bf16StepsScalar(dtype), dtype, kv, heads, c, n, &rng);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// A NaN code makes its position's score NaN, and an infinite V code its element infinite, as the
// specification; an odd last row's infinity does not turn into NaN through its padding.
TEST(AttentionBf16Test, NanAndInfinityCodes) {
  for (KvDtype dtype : kFormats) {
    const LowPrecisionSteps* steps = Fp8StepsAvx512Bf16(dtype);
    if (steps == nullptr) GTEST_SKIP() << "no AVX-512 BF16 steps on this CPU";
    SCOPED_TRACE(KvDtypeName(dtype));
    const int d = 64;
    alignas(64) uint8_t k[3][d], v[3][d];
    const uint8_t scale[2] = {0x00, 0x3C};  // f16 1.0
    std::memset(k, 0x38, sizeof(k));        // 1.0 in e4m3, 0.5 in e5m2.
    std::memset(v, 0x38, sizeof(v));
    k[1][5] = 0x7F;  // NaN in both formats (e5m2: 0x7D-0x7F).
    const uint8_t inf_code = dtype == KvDtype::kFp8E5M2 ? 0x7C : 0x38;
    v[2][9] = inf_code;
    std::vector<KvRowRefs> rows(size_t(kAttentionChunk + kAttentionPosTile));
    for (int t = 0; t < 3; ++t) rows[size_t(t)] = {k[t], scale, v[t], scale};
    rows[3] = rows[2];
    std::vector<float> q(d, 0.5f);
    std::vector<int16_t> q16(d);
    float qs = 0;
    steps->quantize_query(q.data(), d, q16.data(), &qs);
    std::vector<float> scores(kAttentionChunk, 0.0f);
    steps->scores(rows.data(), 3, 0b111, q16.data(), &qs, 1, d, scores.data(), KvPrefetch{});
    EXPECT_FALSE(std::isnan(scores[0]));
    EXPECT_TRUE(std::isnan(scores[1]));
    EXPECT_FALSE(std::isnan(scores[2]));
    std::vector<float> p(kAttentionChunk, 0.0f);
    p[0] = p[2] = 1.0f;
    std::vector<float> acc(d, 0.0f);
    const float alpha = 1.0f;
    float l = 2.0f;
    steps->accumulate(rows.data(), 3, 0b111, p.data(), &alpha, 1, d, acc.data(), d, &l);
    EXPECT_EQ(l, 2.0f);  // Weights of 1 x scale 1 are exact in bf16.
    for (int i = 0; i < d; ++i) {
      const bool inf_here = dtype == KvDtype::kFp8E5M2 && Fp8Bf16Element(size_t(i)) == 9;
      EXPECT_EQ(std::isinf(acc[size_t(i)]), inf_here) << i;
      EXPECT_FALSE(std::isnan(acc[size_t(i)])) << i;
    }
  }
}

TEST(AttentionBf16Test, AppliesOnlyToOneFp8FormatWithWholeRuns) {
  KvShape s;
  s.k_dtype = s.v_dtype = KvDtype::kFp8E4M3;
  s.head_dim_k = s.head_dim_v = 128;
  EXPECT_TRUE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
  s.k_dtype = s.v_dtype = KvDtype::kFp8E5M2;
  EXPECT_TRUE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
  s.v_dtype = KvDtype::kFp8E4M3;  // Two formats.
  EXPECT_FALSE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
  s.k_dtype = s.v_dtype = KvDtype::kFp8E4M3;
  s.head_dim_k = s.head_dim_v = 96;  // Not a multiple of 64.
  EXPECT_FALSE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 576;
  EXPECT_FALSE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 64;
  s.k_dtype = s.v_dtype = KvDtype::kInt8;
  EXPECT_FALSE(Fp8Bf16Applies(attention_test::LayoutOf(s)));
}

}  // namespace
}  // namespace kvengine
