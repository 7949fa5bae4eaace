// The int4 steps (attention_int4.h): the AVX-512 VNNI implementation, where this CPU runs it,
// against the scalar specification on random int4 rows (every code, random f16 scales and mins),
// queries of several magnitudes, 1-4 heads, head dims 64-512, chunks of 1-64 rows, paged and
// shuffled rows (scores bit for bit, values within f32 sums); the query encoding; the element
// orders; and the specification's own arithmetic against the decoded rows.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_int4.h"
#include "kernels/attention/attention_test_util.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine {
namespace {

using attention_test::ChunkRows;
using attention_test::KvShape;
using attention_test::MakeKv;
using attention_test::OwnedKv;
using attention_test::RowsOf;
using attention_test::SameBits;

KvShape Int4Shape(int d, KvDtype v_dtype = KvDtype::kF16) {
  KvShape s;
  s.k_dtype = KvDtype::kInt4;
  s.v_dtype = v_dtype;
  s.num_kv_heads = 2;
  s.head_dim_k = s.head_dim_v = d;
  s.block_size = 16;
  return s;
}

TEST(AttentionInt4Test, QueryOrderIsAPermutation) {
  for (size_t d : {64, 128, 512}) EXPECT_TRUE(attention_test::IsPermutation(&Int4Int8QElement, d));
  // Per 64 elements: the even ones (a K row's low nibbles), then the odd ones.
  EXPECT_EQ(Int4Int8QElement(0), 0u);
  EXPECT_EQ(Int4Int8QElement(1), 2u);
  EXPECT_EQ(Int4Int8QElement(31), 62u);
  EXPECT_EQ(Int4Int8QElement(32), 1u);
  EXPECT_EQ(Int4Int8QElement(63), 63u);
  EXPECT_EQ(Int4Int8QElement(64 + 33), 64u + 3u);
}

// The specification's encoding: codes round q * 127 / amax to nearest even, the largest |q| is
// +-127, the group sums add the codes, and a non-finite q gives zero codes and a NaN scale.
TEST(AttentionInt4Test, QueryEncodingFollowsItsRules) {
  const size_t d = 64;
  std::vector<float> q(d, 0.0f);
  q[0] = -2.0f;               // amax: code -127.
  q[1] = 1.0f;                // 63.5: a tie, to even 64.
  q[3] = 2.0f * 62.5f / 127;  // 62.5: a tie, to even 62.
  q[40] = 0.5f;               // 31.75 -> 32 (group 1).
  std::vector<int16_t> q16(d);
  float scale = 0;
  Int4Int8QuantizeQuery(q.data(), d, q16.data(), &scale);
  int8_t code[64];
  std::memcpy(code, q16.data(), d);
  const auto at = [&](size_t e) {
    for (size_t i = 0; i < d; ++i) {
      if (Int4Int8QElement(i) == e) return int(code[i]);
    }
    return -1000;
  };
  EXPECT_EQ(at(0), -127);
  EXPECT_EQ(at(1), 64);
  EXPECT_EQ(at(3), 62);
  EXPECT_EQ(at(40), 32);
  EXPECT_EQ(Int4Int8QuerySum(q16.data(), d, 0), -127.0f + 64 + 62);
  EXPECT_EQ(Int4Int8QuerySum(q16.data(), d, 1), 32.0f);
  EXPECT_EQ(scale, 2.0f / 127);
  q[7] = std::numeric_limits<float>::infinity();
  Int4Int8QuantizeQuery(q.data(), d, q16.data(), &scale);
  EXPECT_TRUE(std::isnan(scale));
  for (size_t i = 0; i < d / 2; ++i) EXPECT_EQ(q16[i], 0) << i;
  EXPECT_EQ(Int4Int8QuerySum(q16.data(), d, 0), 0.0f);
}

// The SIMD encoding gives the specification's bytes, group sums and scale.
TEST(AttentionInt4Test, QuantizeQueryMatchesSpecification) {
  const LowPrecisionSteps* steps = Int4StepsAvx512Vnni(false);
  if (steps == nullptr) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t d : {64, 128, 192, 512}) {
    for (float magnitude : {1e-3f, 1.0f, 300.0f}) {
      std::vector<float> q(d);
      for (float& x : q) x = nd(rng) * magnitude;
      q[d / 3] = 127.5f / 127 * magnitude;  // Ties somewhere near.
      for (bool finite : {true, false}) {
        if (!finite) q[d - 1] = std::numeric_limits<float>::quiet_NaN();
        std::vector<int16_t> want(d), got(d);
        float want_scale = 0, got_scale = 0;
        Int4Int8QuantizeQuery(q.data(), d, want.data(), &want_scale);
        steps->quantize_query(q.data(), d, got.data(), &got_scale);
        // Bytes [0, d + 4 d / 32): codes and sums (the rest of the buffer is not the encoding's).
        EXPECT_EQ(std::memcmp(want.data(), got.data(), d + d / 8), 0) << d << " " << magnitude;
        EXPECT_TRUE(SameBits(got_scale, want_scale) ||
                    (std::isnan(got_scale) && std::isnan(want_scale)));
      }
    }
  }
}

// Random bytes in every int4 row (every code) and random finite f16 scales and mins of either
// sign and of several magnitudes in every int4 row's scale bytes: K's, and V's where int4.
void FillRandomInt4(OwnedKv* kv, std::mt19937* rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> octave(-8, 8);
  const KvLayerView& v = kv->view;
  const auto fill = [&](uint8_t* data, size_t data_bytes, uint8_t* scale, size_t scale_bytes) {
    for (size_t e = 0; e < data_bytes; ++e) data[e] = uint8_t(byte(*rng));
    for (size_t g = 0; g < scale_bytes / 4; ++g) {
      const float s = std::fabs(unit(*rng)) * std::ldexp(1.0f, octave(*rng));
      const float m = unit(*rng) * std::ldexp(1.0f, octave(*rng));
      quant_internal::StoreU16(scale + 4 * g, F32ToF16(s));
      quant_internal::StoreU16(scale + 4 * g + 2, F32ToF16(m));
    }
  };
  for (int32_t b : kv->table) {
    uint8_t* block = kv->pool.data() + size_t(b) * v.bytes_per_block;
    for (size_t row = 0; row < size_t(v.num_kv_heads) * size_t(v.block_size); ++row) {
      fill(block + v.k_data + row * v.k_row_bytes, v.k_row_bytes,
           block + v.k_scale + row * v.k_scale_bytes, v.k_scale_bytes);
      if (v.v_dtype == KvDtype::kInt4) {
        fill(block + v.v_data + row * v.v_row_bytes, v.v_row_bytes,
             block + v.v_scale + row * v.v_scale_bytes, v.v_scale_bytes);
      }
    }
  }
}

int CodeAt(const uint8_t* row, size_t e) { return (row[e / 2] >> (4 * (e % 2))) & 15; }

// The SIMD value step against the specification: the same int16 weights and exact integer sums,
// so they differ only by the float sums of the mins and the last multiply-adds (64 x 2^-24 of the
// terms' magnitude).
TEST(AttentionInt4Test, ValuesMatchSpecification) {
  const LowPrecisionSteps* steps = Int4StepsAvx512Vnni(true);
  if (steps == nullptr) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const LowPrecisionSteps& spec = Int4StepsScalar(true);
  std::mt19937 rng(6);
  int checked = 0;
  for (int d : {64, 128, 256}) {
    OwnedKv kv = MakeKv(Int4Shape(d, KvDtype::kInt4), 300, uint32_t(d));
    ASSERT_TRUE(Int4Int8ValuesApply(kv.view));
    FillRandomInt4(&kv, &rng);
    const size_t dv = size_t(d);
    for (int heads = 1; heads <= 4; ++heads) {
      for (int n : {1, 2, 3, 5, 8, 33, 63, 64}) {
        for (bool shuffled : {false, true}) {
          SCOPED_TRACE("d=" + std::to_string(d) + " heads=" + std::to_string(heads) +
                       " n=" + std::to_string(n) + (shuffled ? " shuffled" : " paged"));
          const ChunkRows c = RowsOf(kv, heads % 2, 5 + n, n, shuffled, &rng);
          const attention_test::ValueStepInputs in =
              attention_test::RandomValueStepInputs(heads, n, dv, &rng);
          std::vector<float> want = in.acc, got = in.acc;
          std::vector<float> l_want(size_t(heads), 3.0f), l_got = l_want;
          spec.accumulate(c.rows.data(), n, c.run_starts, in.p.data(), in.alpha.data(), heads, dv,
                          want.data(), in.stride, l_want.data());
          steps->accumulate(c.rows.data(), n, c.run_starts, in.p.data(), in.alpha.data(), heads, dv,
                            got.data(), in.stride, l_got.data());
          EXPECT_EQ(l_got, l_want);
          for (int h = 0; h < heads; ++h) {
            for (size_t i = 0; i < dv; ++i) {
              const size_t a = size_t(h) * in.stride + i, e = Int4Int8Element(i);
              double magnitude = std::fabs(double(in.acc[a]) * in.alpha[size_t(h)]);
              for (int t = 0; t < n; ++t) {
                const KvRowRefs& r = c.rows[size_t(t)];
                const quant_internal::Int4Params pr =
                    quant_internal::LoadInt4Params(r.v_scale, int(e / 32));
                const double pt = in.p[size_t(h) * kAttentionChunk + size_t(t)];
                magnitude += pt * (pr.scale * CodeAt(r.v_data, e) + std::fabs(pr.min));
              }
              ASSERT_LE(std::fabs(double(got[a]) - want[a]),
                        64.0 * std::ldexp(1.0, -24) * magnitude + 1e-30)
                  << "h=" << h << " i=" << i << " got " << got[a] << " want " << want[a];
            }
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The specification's value step against attention's own arithmetic: sum_t p_t v_t over the
// decoded rows, up to the weights' rounding (half a step of each group's largest / 32767 per
// position) and f32 sums.
TEST(AttentionInt4Test, SpecificationValuesAreWeightedSumsOfTheDecodedRows) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int d : {64, 256}) {
    OwnedKv kv = MakeKv(Int4Shape(d, KvDtype::kInt4), 64, uint32_t(d));
    const size_t dv = size_t(d);
    const ChunkRows c = RowsOf(kv, 0, 0, 64, false, &rng);
    std::vector<float> p(kAttentionChunk);
    for (float& x : p) x = unit(rng);
    std::vector<float> acc(dv, 0.0f);
    const float alpha = 1.0f;
    Int4StepsScalar(true).accumulate(c.rows.data(), 64, c.run_starts, p.data(), &alpha, 1, dv,
                                     acc.data(), dv, nullptr);
    std::vector<double> want(dv, 0.0), bound(dv, 1e-6);
    std::vector<float> v(dv);
    for (int t = 0; t < 64; ++t) {
      DecodeRow(KvDtype::kInt4, c.rows[size_t(t)].v_data, c.rows[size_t(t)].v_scale, d, v.data());
      for (size_t e = 0; e < dv; ++e) want[e] += double(p[size_t(t)]) * v[e];
    }
    for (size_t g = 0; g < dv / 32; ++g) {
      double wmax = 0;  // The group's largest p_t * s_tg.
      for (int t = 0; t < 64; ++t) {
        wmax = std::max(
            wmax, double(p[size_t(t)]) *
                      quant_internal::LoadInt4Params(c.rows[size_t(t)].v_scale, int(g)).scale);
      }
      for (size_t e = 32 * g; e < 32 * g + 32; ++e) bound[e] += 64 * 0.5 * wmax / 32767 * 15;
    }
    for (size_t i = 0; i < dv; ++i) {
      const size_t e = Int4Int8Element(i);
      EXPECT_NEAR(acc[i], want[e], bound[e] + 1e-5 * std::fabs(want[e])) << "d=" << d << " e=" << e;
    }
  }
}

TEST(AttentionInt4Test, ValueOrderIsAPermutation) {
  for (size_t d : {64, 128, 256}) EXPECT_TRUE(attention_test::IsPermutation(&Int4Int8Element, d));
  // Index 32 P + 16 k + 8 s + 4 L + u of a piece holds element 32 L + 16 P + 4 u + 2 k + s.
  EXPECT_EQ(Int4Int8Element(0), 0u);
  EXPECT_EQ(Int4Int8Element(1), 4u);
  EXPECT_EQ(Int4Int8Element(4), 32u);
  EXPECT_EQ(Int4Int8Element(8), 1u);
  EXPECT_EQ(Int4Int8Element(16), 2u);
  EXPECT_EQ(Int4Int8Element(32), 16u);
  EXPECT_EQ(Int4Int8Element(64 + 63), 64u + 63u);
}

TEST(AttentionInt4Test, ScoresMatchSpecificationBitForBit) {
  const LowPrecisionSteps* steps = Int4StepsAvx512Vnni(false);
  if (steps == nullptr) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const LowPrecisionSteps& spec = Int4StepsScalar(false);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int checked = 0;
  for (int d : {64, 128, 192, 512}) {
    OwnedKv kv = MakeKv(Int4Shape(d), 300, uint32_t(d));
    ASSERT_TRUE(Int4Int8Applies(kv.view));
    FillRandomInt4(&kv, &rng);
    const size_t dk = size_t(d);
    for (int heads = 1; heads <= 4; ++heads) {
      std::vector<int16_t> q16(size_t(heads) * dk);
      std::vector<float> q_scale(static_cast<size_t>(heads));
      for (int h = 0; h < heads; ++h) {
        std::vector<float> q(dk);
        for (float& x : q) x = nd(rng) * (h == 2 ? 50.0f : 1.0f);
        spec.quantize_query(q.data(), dk, q16.data() + size_t(h) * dk, &q_scale[size_t(h)]);
      }
      for (int n : {1, 2, 3, 4, 5, 7, 8, 33, 64}) {
        for (bool shuffled : {false, true}) {
          SCOPED_TRACE("d=" + std::to_string(d) + " heads=" + std::to_string(heads) +
                       " n=" + std::to_string(n) + (shuffled ? " shuffled" : " paged"));
          const ChunkRows c = RowsOf(kv, heads % 2, 5 + n, n, shuffled, &rng);
          KvPrefetch pf;  // Another chunk's rows to prefetch (speed only).
          pf.rows = c.rows.data();
          pf.n = n;
          pf.k_bytes = kv.view.k_row_bytes;
          std::vector<float> want(size_t(heads) * kAttentionChunk, 0.0f), got(want);
          spec.scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk,
                      want.data(), KvPrefetch{});
          steps->scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk,
                        got.data(), pf);
          for (int h = 0; h < heads; ++h) {
            for (int t = 0; t < n; ++t) {
              const size_t i = size_t(h) * kAttentionChunk + size_t(t);
              ASSERT_TRUE(SameBits(got[i], want[i]))
                  << "h=" << h << " t=" << t << " got " << got[i] << " want " << want[i];
            }
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The specification against attention's own arithmetic: q8 * q_scale times the decoded K row is
// the score up to q's rounding (half a step of amax / 127 per element) and f32 sums.
TEST(AttentionInt4Test, SpecificationScoresAreDotProductsWithTheDecodedRows) {
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int d : {64, 256}) {
    OwnedKv kv = MakeKv(Int4Shape(d), 64, uint32_t(d));
    const size_t dk = size_t(d);
    std::vector<float> q(dk);
    for (float& x : q) x = nd(rng);
    std::vector<int16_t> q16(dk);
    float q_scale = 0;
    Int4Int8QuantizeQuery(q.data(), dk, q16.data(), &q_scale);
    const ChunkRows c = RowsOf(kv, 1, 0, 64, false, &rng);
    std::vector<float> scores(kAttentionChunk);
    Int4StepsScalar(false).scores(c.rows.data(), 64, c.run_starts, q16.data(), &q_scale, 1, dk,
                                  scores.data(), KvPrefetch{});
    float amax = 0;
    for (float x : q) amax = std::max(amax, std::fabs(x));
    for (int t = 0; t < 64; ++t) {
      std::vector<float> k(dk);
      DecodeRow(KvDtype::kInt4, c.rows[size_t(t)].k_data, c.rows[size_t(t)].k_scale, d, k.data());
      double exact = 0, bound = 0;
      for (size_t i = 0; i < dk; ++i) {
        exact += double(q[i]) * k[i];
        bound += 0.5 * amax / 127 * std::fabs(k[i]) + 1e-5 * std::fabs(q[i] * k[i]);
      }
      EXPECT_NEAR(scores[size_t(t)], exact, bound) << "d=" << d << " t=" << t;
    }
  }
}

TEST(AttentionInt4Test, AppliesToInt4KInGroupsOf32AndWholePieces) {
  KvShape s = Int4Shape(128);
  EXPECT_TRUE(Int4Int8Applies(attention_test::LayoutOf(s)));
  s.v_dtype = KvDtype::kInt4;
  EXPECT_TRUE(Int4Int8Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 96;  // Not a multiple of 64.
  EXPECT_FALSE(Int4Int8Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 576;  // Beyond 512.
  EXPECT_FALSE(Int4Int8Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 64;
  s.k_dtype = KvDtype::kInt8;
  EXPECT_FALSE(Int4Int8Applies(attention_test::LayoutOf(s)));
  // The value step: int4 V of at most 256 elements, with int4 K.
  s = Int4Shape(256, KvDtype::kInt4);
  EXPECT_TRUE(Int4Int8ValuesApply(attention_test::LayoutOf(s)));
  for (int d : {192, 512}) {  // 6 groups; 16.
    s = Int4Shape(d, KvDtype::kInt4);
    EXPECT_TRUE(Int4Int8Applies(attention_test::LayoutOf(s))) << d;
    EXPECT_FALSE(Int4Int8ValuesApply(attention_test::LayoutOf(s))) << d;
  }
  s = Int4Shape(128, KvDtype::kF16);
  EXPECT_FALSE(Int4Int8ValuesApply(attention_test::LayoutOf(s)));
  s.k_dtype = KvDtype::kF16;
  s.v_dtype = KvDtype::kInt4;
  EXPECT_FALSE(Int4Int8ValuesApply(attention_test::LayoutOf(s)));
}

}  // namespace
}  // namespace kvengine
