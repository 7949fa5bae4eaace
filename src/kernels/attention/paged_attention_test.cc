// Paged attention over the real KV manager's blocks vs plain contiguous attention over the same
// (decoded) K/V, for every KV dtype, GQA, windows with sinks, and several block sizes.
#include "kernels/attention/paged_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "kernels/attention/attention_bf16.h"
#include "kernels/attention/attention_int4.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/kv_layer_view.h"
#include "kv/kv_cache_manager.h"

namespace kvengine {
namespace {

// Paged vs reference differ only by float vs double accumulation (the decoded K/V are shared).
constexpr float kAttentionTolerance = 2e-5f;
// int8 KV through the int16 steps (the default on AVX2 and AVX-512 CPUs) also rounds q and the
// folded softmax weights to int16 (attention_int16.h): attention_kernel_test.cc's budget of
// 2e-4 * max|v|, with |v| < 5 here (normal(0, 1) values of 37 x 2 x 64 rows).
constexpr float kInt16Int8AttentionTolerance = 1e-3f;
// fp8 KV through the bf16 steps (the default on CPUs with AVX512_BF16) rounds q and the folded
// weights to bf16 (attention_bf16.h): attention_kernel_test.cc's budget of 2e-2 * max|v|.
constexpr float kBf16Fp8AttentionTolerance = 0.1f;
// int4 K through the int8 score steps (the default on AVX-512 VNNI CPUs) rounds q to int8
// (attention_int4.h): attention_kernel_test.cc's budget of 6e-2 * max|v|.
constexpr float kInt8Int4AttentionTolerance = 0.3f;

struct Case {
  KvDtype dtype;
  int block_size;
  int head_dim;
  int window;
  int sinks;
};

void RunCase(const Case& c, bool release_window) {
  SCOPED_TRACE(std::string(KvDtypeName(c.dtype)) + " B=" + std::to_string(c.block_size) +
               " d=" + std::to_string(c.head_dim) + " W=" + std::to_string(c.window) +
               " S=" + std::to_string(c.sinks));
  const int n_heads = 4, n_kv = 2, layers = 2;
  const int64_t T = 37;
  KvGroupSpec g;
  g.kind = c.window > 0 ? KvGroupKind::kSlidingWindow : KvGroupKind::kFull;
  g.layers = {0, 1};
  g.num_kv_heads = n_kv;
  g.head_dim_k = g.head_dim_v = c.head_dim;
  g.window = c.window;
  g.sink_tokens = c.sinks;
  g.dtypes.assign(2, {c.dtype, c.dtype});
  KvCacheConfig cfg;
  cfg.groups = {g};
  cfg.block_size = c.block_size;
  cfg.num_blocks = 64;
  auto m = std::move(KvCacheManager::Create(cfg)).value();
  ASSERT_TRUE(m->AddSequence(1).ok());
  std::vector<int32_t> toks(size_t(T), 5);
  ASSERT_TRUE(m->Append(1, toks).ok);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t row = size_t(n_kv) * size_t(c.head_dim);
  // Decoded K/V per layer, contiguous [T][n_kv][d].
  std::vector<std::vector<float>> kc(layers, std::vector<float>(size_t(T) * row));
  std::vector<std::vector<float>> vc = kc;
  std::vector<float> k(row), v(row);
  for (int l = 0; l < layers; ++l) {
    for (int64_t p = 0; p < T; ++p) {
      for (auto& x : k) x = nd(rng) * (p % 7 == 0 ? 8.f : 1.f);  // Some outlier rows.
      for (auto& x : v) x = nd(rng);
      m->WriteKv(1, l, p, k.data(), v.data());
      m->ReadKv(1, l, p, kc[size_t(l)].data() + size_t(p) * row,
                vc[size_t(l)].data() + size_t(p) * row);
    }
  }
  if (release_window) {
    ASSERT_TRUE(m->MarkComputed(1, T).ok());
  }
  std::vector<float> q(size_t(n_heads) * size_t(c.head_dim)), out(q.size()), ref(q.size());
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  const bool int16_int8 = c.dtype == KvDtype::kInt8 && DefaultAttentionKernels().int8_int16;
  for (int l = 0; l < layers; ++l) {
    const KvLayerView view = LayerViewOf(*m, l);
    const bool bf16_fp8 = DefaultAttentionKernels().fp8_bf16 && Fp8Bf16Applies(view);
    const bool int8_int4 = DefaultAttentionKernels().int4_int8 && Int4Int8Applies(view);
    const float tol = int16_int8  ? kInt16Int8AttentionTolerance
                      : bf16_fp8  ? kBf16Fp8AttentionTolerance
                      : int8_int4 ? kInt8Int4AttentionTolerance
                                  : kAttentionTolerance * 8;
    for (int64_t pos = release_window ? T - 1 : 0; pos < T; ++pos) {
      for (auto& x : q) x = nd(rng);
      PagedAttention(view, m->BlockTable(1, 0), q.data(), n_heads, pos, scale, out.data());
      ContiguousAttentionRef(view, kc[size_t(l)].data(), vc[size_t(l)].data(), q.data(), n_heads,
                             pos, scale, ref.data());
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], ref[i], tol) << "layer " << l << " pos " << pos;
      }
    }
  }
}

TEST(PagedAttentionTest, MatchesContiguousForEveryDtype) {
  for (KvDtype d : kAllKvDtypes) {
    for (int b : {1, 4, 16}) RunCase({d, b, 8, 0, 0}, false);
    RunCase({d, 16, 64, 0, 0}, false);
  }
}

TEST(PagedAttentionTest, WindowAndSinks) {
  for (KvDtype d : {KvDtype::kF32, KvDtype::kF16, KvDtype::kInt8, KvDtype::kInt4}) {
    RunCase({d, 4, 8, 5, 0}, false);
    RunCase({d, 4, 8, 6, 3}, false);
    RunCase({d, 16, 8, 9, 2}, true);  // Out-of-window blocks released; the last query still works.
  }
}

TEST(PagedAttentionTest, VisiblePositions) {
  KvLayerView v;
  v.window = 4;
  v.sink_tokens = 2;
  VisibleRange r = VisiblePositions(v, 10);
  EXPECT_EQ(r.sinks, 2);
  EXPECT_EQ(r.lo, 7);
  EXPECT_EQ(r.count(10), 6);
  r = VisiblePositions(v, 2);
  EXPECT_EQ(r.sinks, 0);
  EXPECT_EQ(r.lo, 0);
}

}  // namespace
}  // namespace kvengine
