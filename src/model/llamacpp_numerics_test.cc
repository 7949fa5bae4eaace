// llama.cpp's CPU rounding (llamacpp_numerics.h): hand-made cases that only pass when the query
// and the V accumulator are rounded to f16 as described there, the f32 RoPE angles against the
// double-precision ones, and the whole attention against the exact reference within the f16
// noise it is meant to reproduce (window, sinks, GQA and soft-capping included).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention/attention_test_util.h"
#include "model/decoder_model.h"
#include "model/llamacpp_numerics.h"
#include "model/softcap_attention.h"

namespace kvengine {
namespace {

using attention_test::KvShape;
using attention_test::MakeKv;
using attention_test::OwnedKv;

constexpr int kDim = 64;
// f32 RoPE angles (pos * theta_scale^i by repeated multiplication) against double-precision ones,
// positions below 64: a few ulps of angles up to 64 rad.
constexpr float kRopeAngleTolerance = 2e-5f;
// Against exact attention on random f16 KV (values N(0, 1), every 7th K row x8, up to 40
// positions): the f16 query moves scores by up to ~|s| * 2^-11 and the f16 accumulator loses up to
// 2^-12 of |acc| per position. Measured worst 1.3e-3; relative to max|v|.
constexpr float kF16RoundingTolerance = 1e-2f;

// Overwrites row (position t, KV head kh) of an f16 KV with k and v [kDim].
void SetRow(OwnedKv& kv, int64_t t, int kh, const std::vector<float>& k,
            const std::vector<float>& v) {
  const KvLayerView& view = kv.view;
  uint8_t* block =
      kv.pool.data() + size_t(kv.table[size_t(t / view.block_size)]) * view.bytes_per_block;
  const size_t row = size_t(kh) * size_t(view.block_size) + size_t(t % view.block_size);
  EncodeRow(KvDtype::kF16, k.data(), kDim, block + view.k_data + row * view.k_row_bytes, nullptr);
  EncodeRow(KvDtype::kF16, v.data(), kDim, block + view.v_data + row * view.v_row_bytes, nullptr);
}

// One query (one KV head, one query head) at `pos` over kv; returns the output [kDim].
std::vector<float> Attend(const OwnedKv& kv, const std::vector<float>& q, int64_t pos, float scale,
                          float cap = 0) {
  std::vector<float> out(kDim);
  const AttentionQuery query{kv.table, q.data(), pos, out.data()};
  LlamaCppFlashAttentionBatch(kv.view, std::span(&query, 1), 1, scale, cap, nullptr);
  return out;
}

KvShape OneHead() {
  KvShape s;
  s.num_kv_heads = 1;
  s.head_dim_k = s.head_dim_v = kDim;
  return s;
}

TEST(LlamaCppNumericsTest, TheVAccumulatorIsF16) {
  // Equal scores (K = 0): the output is the mean of the V rows, summed in f16. 2048 + 1 is a tie
  // between the f16 neighbours 2048 and 2050 and rounds to even: (2048 + 1) / 2 becomes 1024.
  OwnedKv kv = MakeKv(OneHead(), 2, 3);
  const std::vector<float> zero(kDim, 0.0f);
  SetRow(kv, 0, 0, zero, std::vector<float>(kDim, 2048.0f));
  SetRow(kv, 1, 0, zero, std::vector<float>(kDim, 1.0f));
  const std::vector<float> q(kDim, 0.5f);
  for (float x : Attend(kv, q, 1, 0.125f)) EXPECT_EQ(x, 1024.0f);  // Exact: 1024.5.
  // One position: the output is that V row, whatever the query.
  for (float x : Attend(kv, q, 0, 0.125f)) EXPECT_EQ(x, 2048.0f);
}

TEST(LlamaCppNumericsTest, TheQueryIsRoundedToF16) {
  // v0 = 0, v1 = 1, k0 = 0, k1 = (1024, -1024, 0...), q = (1 + 2^-12, 1, 0...). Unrounded,
  // s1 = 1024 * 2^-12 = 0.25 and the output is e^0.25 / (1 + e^0.25) = 0.562; with q[0] rounded
  // to f16 (1: the f16 step at 1 is 2^-10) s1 = s0 = 0 and the output is 1 / 2 exactly.
  OwnedKv kv = MakeKv(OneHead(), 2, 3);
  std::vector<float> k1(kDim, 0.0f);
  k1[0] = 1024.0f;
  k1[1] = -1024.0f;
  SetRow(kv, 0, 0, std::vector<float>(kDim, 0.0f), std::vector<float>(kDim, 0.0f));
  SetRow(kv, 1, 0, k1, std::vector<float>(kDim, 1.0f));
  std::vector<float> q(kDim, 0.0f);
  q[0] = 1.0f + 0x1p-12f;
  q[1] = 1.0f;
  for (float x : Attend(kv, q, 1, 1.0f)) EXPECT_EQ(x, 0.5f);
}

TEST(LlamaCppNumericsTest, RopeAnglesAreF32AndCloseToDoublePrecision) {
  LayerRope rope;
  rope.params.n_rot = kDim;
  rope.params.theta = 10000.0f;
  LayerRope scaled = rope;
  scaled.params.freq_scale = 0.25f;
  scaled.freq_factors.resize(kDim / 2);
  for (int i = 0; i < kDim / 2; ++i) scaled.freq_factors[size_t(i)] = 1.0f + 0.25f * float(i % 5);
  float got[kDim], want[kDim];
  int differ = 0;
  for (const LayerRope* r : {&rope, &scaled}) {
    for (int64_t pos = 0; pos < 64; ++pos) {
      LlamaCppRopeCosSin(pos, *r, got);
      LayerRopeCosSin(pos, *r, want);
      for (int i = 0; i < kDim; ++i) {
        EXPECT_NEAR(got[i], want[i], kRopeAngleTolerance) << "pos " << pos << " entry " << i;
        differ += got[i] != want[i];
      }
    }
  }
  EXPECT_GT(differ, 0);  // Not the double-precision angles.
  LlamaCppRopeCosSin(0, rope, got);
  for (int i = 0; i < kDim / 2; ++i) {
    EXPECT_EQ(got[i], 1.0f);
    EXPECT_EQ(got[kDim / 2 + i], 0.0f);
  }
}

// Every query of `positions` (GQA 4 query heads over 2 KV heads) against the exact attention:
// ContiguousAttentionRef, or SoftCappedAttentionBatch when cap > 0.
void CheckAgainstExact(const KvShape& shape, int64_t tokens, float cap) {
  constexpr int kHeads = 4;
  const OwnedKv kv = MakeKv(shape, tokens, 17);
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t qn = size_t(kHeads) * kDim;
  const float scale = 1.0f / std::sqrt(float(kDim));
  float max_v = 0;
  for (float x : kv.v) max_v = std::max(max_v, std::fabs(x));
  float worst = 0;
  for (int64_t pos = 0; pos < tokens; ++pos) {
    std::vector<float> q(qn), got(qn), want(qn);
    for (float& x : q) x = nd(rng);
    const AttentionQuery query{kv.table, q.data(), pos, got.data()};
    LlamaCppFlashAttentionBatch(kv.view, std::span(&query, 1), kHeads, scale, cap, nullptr);
    if (cap > 0) {
      const AttentionQuery exact{kv.table, q.data(), pos, want.data()};
      SoftCappedAttentionBatch(kv.view, std::span(&exact, 1), kHeads, scale, cap, nullptr);
    } else {
      ContiguousAttentionRef(kv.view, kv.k.data(), kv.v.data(), q.data(), kHeads, pos, scale,
                             want.data());
    }
    for (size_t j = 0; j < qn; ++j) {
      worst = std::max(worst, std::fabs(got[j] - want[j]) / max_v);
      ASSERT_NEAR(got[j], want[j], kF16RoundingTolerance * max_v) << "pos " << pos << " out " << j;
    }
  }
  std::printf("worst |llama.cpp rounding - exact| / max|v| = %.2e\n", worst);
  EXPECT_GT(worst, 1e-5f);  // It does round.
}

TEST(LlamaCppNumericsTest, WithinF16NoiseOfExactAttention) {
  KvShape s;
  s.num_kv_heads = 2;
  s.head_dim_k = s.head_dim_v = kDim;
  CheckAgainstExact(s, 40, 0);
}

TEST(LlamaCppNumericsTest, HonoursWindowSinksAndSoftCap) {
  KvShape s;
  s.num_kv_heads = 2;
  s.head_dim_k = s.head_dim_v = kDim;
  s.window = 8;
  s.sink_tokens = 2;
  CheckAgainstExact(s, 40, 0);
  s.sink_tokens = 0;
  CheckAgainstExact(s, 40, 50.0f);
}

}  // namespace
}  // namespace kvengine
