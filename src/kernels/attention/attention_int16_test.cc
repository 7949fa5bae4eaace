// The int16 steps of int8 attention (attention_int16.h): every implementation this CPU runs (AVX2,
// AVX-512 VNNI) against the scalar specification, bit for bit, on random int8 KV, queries,
// softmax weights and accumulators: query quantization, scores and value accumulation for 1-4
// heads, head dims 32-512, chunks of 1-64 rows, paged rows (runs of adjacent scales broken at
// block edges) and rows in no order at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_int16.h"
#include "kernels/attention/attention_test_util.h"

namespace kvengine {
namespace {

using attention_test::ChunkRows;
using attention_test::KvShape;
using attention_test::MakeKv;
using attention_test::OwnedKv;
using attention_test::RowsOf;
using attention_test::SameBits;

constexpr int kChunk = kAttentionChunk;

// The implementations this CPU runs other than the specification.
std::vector<const LowPrecisionSteps*> SimdSteps() {
  std::vector<const LowPrecisionSteps*> all;
  if (const LowPrecisionSteps* s = Int8StepsAvx2()) all.push_back(s);
  if (const LowPrecisionSteps* s = Int8StepsAvx512Vnni()) all.push_back(s);
  return all;
}

TEST(AttentionInt16Test, ElementOrderIsAPermutation) {
  for (size_t d : {32, 64, 128}) {
    EXPECT_TRUE(attention_test::IsPermutation(&Int8Int16Element, d)) << d;
  }
  EXPECT_EQ(Int8Int16Element(0), 0u);
  EXPECT_EQ(Int8Int16Element(4), 8u);
  EXPECT_EQ(Int8Int16Element(16), 4u);
  EXPECT_EQ(Int8Int16Element(31), 31u);
  EXPECT_EQ(Int8Int16Element(47), 32u + 27u);
}

TEST(AttentionInt16Test, ListsImplementations) {
  std::cout << "int16 steps: " << Int8StepsScalar().name;
  for (const LowPrecisionSteps* s : SimdSteps()) std::cout << " " << s->name;
  std::cout << "\n";
}

TEST(AttentionInt16Test, QuantizeQueryMatchesSpecification) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const LowPrecisionSteps* steps : SimdSteps()) {
    SCOPED_TRACE(steps->name);
    for (size_t d : {32, 64, 128, 512}) {
      for (float magnitude : {1e-3f, 1.0f, 300.0f}) {
        std::vector<float> q(d);
        for (float& x : q) x = nd(rng) * magnitude;
        q[d / 3] = 0.5f * magnitude;  // Ties and exact halves meet the rounding too.
        std::vector<int16_t> want(d), got(d);
        float want_scale = 0, got_scale = 0;
        Int8StepsScalar().quantize_query(q.data(), d, want.data(), &want_scale);
        steps->quantize_query(q.data(), d, got.data(), &got_scale);
        EXPECT_EQ(got, want) << "d=" << d << " magnitude " << magnitude;
        EXPECT_TRUE(SameBits(got_scale, want_scale));
      }
      const std::vector<float> zeros(d, 0.0f);
      std::vector<int16_t> got(d, 7);
      float scale = -1;
      steps->quantize_query(zeros.data(), d, got.data(), &scale);
      EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](int16_t c) { return c == 0; }));
      EXPECT_EQ(scale, 0.0f);
    }
  }
}

// One chunk through both steps of `steps` and of the specification: scores for t < n and the
// accumulators, bit for bit.
void CheckChunk(const LowPrecisionSteps& steps, const OwnedKv& kv, int heads, const ChunkRows& c,
                int n, std::mt19937* rng) {
  const size_t dk = size_t(kv.view.head_dim_k), dv = size_t(kv.view.head_dim_v);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<int16_t> q16(size_t(heads) * dk);
  std::vector<float> q_scale(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) {
    std::vector<float> q(dk);
    for (float& x : q) x = nd(*rng);
    Int8StepsScalar().quantize_query(q.data(), dk, q16.data() + size_t(h) * dk,
                                     &q_scale[size_t(h)]);
  }
  // Another chunk's rows to prefetch (speed only).
  KvPrefetch pf;
  pf.rows = c.rows.data();
  pf.n = n;
  pf.k_bytes = kv.view.k_row_bytes;
  pf.v_bytes = kv.view.v_row_bytes;
  std::vector<float> want(size_t(heads) * kChunk, 0.0f), got(want.size(), 0.0f);
  Int8StepsScalar().scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk,
                           want.data(), KvPrefetch{});
  steps.scores(c.rows.data(), n, c.run_starts, q16.data(), q_scale.data(), heads, dk, got.data(),
               pf);
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t) {
      const size_t i = size_t(h) * kChunk + size_t(t);
      ASSERT_TRUE(SameBits(got[i], want[i]))
          << "score h=" << h << " t=" << t << " got " << got[i] << " want " << want[i];
    }
  }
  const attention_test::ValueStepInputs in =
      attention_test::RandomValueStepInputs(heads, n, dv, rng);
  const std::vector<float>& p = in.p;
  const std::vector<float>& alpha = in.alpha;
  const size_t stride = in.stride;
  std::vector<float> acc_want = in.acc;
  std::vector<float> acc_got = acc_want;
  std::vector<float> l_want(size_t(heads), 3.0f), l_got = l_want;
  Int8StepsScalar().accumulate(c.rows.data(), n, c.run_starts, p.data(), alpha.data(), heads, dv,
                               acc_want.data(), stride, l_want.data());
  steps.accumulate(c.rows.data(), n, c.run_starts, p.data(), alpha.data(), heads, dv,
                   acc_got.data(), stride, l_got.data());
  for (int h = 0; h < heads; ++h) {  // The int16 steps leave l alone.
    EXPECT_EQ(l_want[size_t(h)], 3.0f);
    EXPECT_EQ(l_got[size_t(h)], 3.0f);
  }
  for (size_t i = 0; i < acc_want.size(); ++i) {
    ASSERT_TRUE(SameBits(acc_got[i], acc_want[i]))
        << "acc " << i << " got " << acc_got[i] << " want " << acc_want[i];
  }
}

TEST(AttentionInt16Test, StepsMatchSpecification) {
  const std::vector<const LowPrecisionSteps*> simd = SimdSteps();
  if (simd.empty()) GTEST_SKIP() << "no SIMD int16 steps on this CPU";
  std::mt19937 rng(3);
  for (int d : {32, 64, 128, 512}) {
    KvShape s;
    s.k_dtype = s.v_dtype = KvDtype::kInt8;
    s.num_kv_heads = 2;
    s.head_dim_k = s.head_dim_v = d;
    s.block_size = 16;
    const OwnedKv kv = MakeKv(s, 300, uint32_t(d));
    ASSERT_TRUE(Int8Int16Applies(kv.view));
    for (const LowPrecisionSteps* steps : simd) {
      for (int heads = 1; heads <= 4; ++heads) {
        for (int n : {1, 2, 7, 8, 9, 33, 64}) {
          for (bool shuffled : {false, true}) {
            SCOPED_TRACE(std::string(steps->name) + " d=" + std::to_string(d) +
                         " heads=" + std::to_string(heads) + " n=" + std::to_string(n) +
                         (shuffled ? " shuffled" : " paged"));
            const ChunkRows c = RowsOf(kv, heads % 2, 5 + n, n, shuffled, &rng);
            CheckChunk(*steps, kv, heads, c, n, &rng);
          }
        }
      }
    }
  }
}

TEST(AttentionInt16Test, AppliesOnlyToInt8WithWholeRuns) {
  KvShape s;
  s.k_dtype = s.v_dtype = KvDtype::kInt8;
  s.head_dim_k = s.head_dim_v = 64;
  EXPECT_TRUE(Int8Int16Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 40;  // Not a multiple of 32.
  EXPECT_FALSE(Int8Int16Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 544;  // A score's int32 sum could overflow.
  EXPECT_FALSE(Int8Int16Applies(attention_test::LayoutOf(s)));
  s.head_dim_k = s.head_dim_v = 64;
  s.v_dtype = KvDtype::kF16;
  EXPECT_FALSE(Int8Int16Applies(attention_test::LayoutOf(s)));
}

}  // namespace
}  // namespace kvengine
