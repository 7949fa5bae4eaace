#include "attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "quant/codec.h"

namespace kvengine {

VisibleRange VisiblePositions(const KvLayerView& kv, int64_t pos) {
  VisibleRange r;
  if (kv.window > 0) r.lo = std::max<int64_t>(0, pos - kv.window + 1);
  r.sinks = std::min<int64_t>(kv.sink_tokens, r.lo);
  return r;
}

namespace {

// Calls f(t, row_index_base) for every visible position t in ascending order, where the K/V rows
// of head h at t are at block_base + section + (h * block_size + slot) * row_bytes.
template <typename F>
void ForEachVisible(const KvLayerView& kv, std::span<const int32_t> table, int64_t pos, F f) {
  const VisibleRange r = VisiblePositions(kv, pos);
  auto visit = [&](int64_t t) {
    const int64_t j = t / kv.block_size;
    KV_CHECK(j < static_cast<int64_t>(table.size()) && table[size_t(j)] >= 0)
        << "position " << t << " is not in the block table";
    const uint8_t* base = kv.pool + size_t(table[size_t(j)]) * kv.bytes_per_block;
    f(base, static_cast<int>(t % kv.block_size));
  };
  for (int64_t t = 0; t < r.sinks; ++t) visit(t);
  for (int64_t t = r.lo; t <= pos; ++t) visit(t);
}

}  // namespace

void PagedAttention(const KvLayerView& kv, std::span<const int32_t> table, const float* q,
                    int n_heads, int64_t pos, float scale, float* out, float* scratch) {
  KV_CHECK(n_heads % kv.num_kv_heads == 0);
  const int group = n_heads / kv.num_kv_heads;
  const int64_t n = VisiblePositions(kv, pos).count(pos);
  const size_t bs = size_t(kv.block_size);
  // Pass 1: scores[h][i] = q_h . k_i * scale, streaming each K row once per KV head.
  int64_t i = 0;
  ForEachVisible(kv, table, pos, [&](const uint8_t* blk, int slot) {
    for (int kh = 0; kh < kv.num_kv_heads; ++kh) {
      const size_t row = size_t(kh) * bs + size_t(slot);
      const uint8_t* kd = blk + kv.k_data + row * kv.k_row_bytes;
      const uint8_t* ks = blk + kv.k_scale + row * kv.k_scale_bytes;
      for (int g = 0; g < group; ++g) {
        const int h = kh * group + g;
        scratch[size_t(h) * size_t(n) + size_t(i)] =
            DotRow(kv.k_dtype, kd, ks, q + size_t(h) * size_t(kv.head_dim_k), kv.head_dim_k) *
            scale;
      }
    }
    ++i;
  });
  // Softmax per head, in place.
  for (int h = 0; h < n_heads; ++h) {
    float* s = scratch + size_t(h) * size_t(n);
    const float mx = *std::max_element(s, s + n);
    float sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      s[t] = std::exp(s[t] - mx);
      sum += s[t];
    }
    const float inv = 1.0f / sum;
    for (int64_t t = 0; t < n; ++t) s[t] *= inv;
  }
  // Pass 2: out_h = sum_i p[h][i] * v_i, streaming each V row once per KV head.
  std::memset(out, 0, sizeof(float) * size_t(n_heads) * size_t(kv.head_dim_v));
  i = 0;
  ForEachVisible(kv, table, pos, [&](const uint8_t* blk, int slot) {
    for (int kh = 0; kh < kv.num_kv_heads; ++kh) {
      const size_t row = size_t(kh) * bs + size_t(slot);
      const uint8_t* vd = blk + kv.v_data + row * kv.v_row_bytes;
      const uint8_t* vs = blk + kv.v_scale + row * kv.v_scale_bytes;
      for (int g = 0; g < group; ++g) {
        const int h = kh * group + g;
        AxpyRow(kv.v_dtype, vd, vs, scratch[size_t(h) * size_t(n) + size_t(i)], kv.head_dim_v,
                out + size_t(h) * size_t(kv.head_dim_v));
      }
    }
    ++i;
  });
}

void PagedAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                         int n_heads, float scale, ThreadPool* pool) {
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scratch;
    for (int64_t i = begin; i < end; ++i) {
      const AttentionQuery& a = queries[size_t(i)];
      scratch.resize(size_t(n_heads) * size_t(VisiblePositions(kv, a.pos).count(a.pos)));
      PagedAttention(kv, a.block_table, a.q, n_heads, a.pos, scale, a.out, scratch.data());
    }
  };
  if (pool == nullptr) {
    run(0, int64_t(queries.size()));
  } else {
    pool->ParallelFor(int64_t(queries.size()), run);
  }
}

void ContiguousAttentionRef(const KvLayerView& shape, const float* k, const float* v,
                            const float* q, int n_heads, int64_t pos, float scale, float* out) {
  const int group = n_heads / shape.num_kv_heads;
  const VisibleRange r = VisiblePositions(shape, pos);
  std::vector<int64_t> ts;
  for (int64_t t = 0; t < r.sinks; ++t) ts.push_back(t);
  for (int64_t t = r.lo; t <= pos; ++t) ts.push_back(t);
  const size_t dk = size_t(shape.head_dim_k), dv = size_t(shape.head_dim_v);
  const size_t nkv = size_t(shape.num_kv_heads);
  for (int h = 0; h < n_heads; ++h) {
    const size_t kh = size_t(h / group);
    std::vector<double> s(ts.size());
    double mx = -INFINITY;
    for (size_t i = 0; i < ts.size(); ++i) {
      double dot = 0;
      const float* kr = k + (size_t(ts[i]) * nkv + kh) * dk;
      for (size_t d = 0; d < dk; ++d) dot += double(q[size_t(h) * dk + d]) * kr[d];
      s[i] = dot * scale;
      mx = std::max(mx, s[i]);
    }
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (size_t d = 0; d < dv; ++d) {
      double acc = 0;
      for (size_t i = 0; i < ts.size(); ++i) acc += s[i] / sum * v[(size_t(ts[i]) * nkv + kh) * dv + d];
      out[size_t(h) * dv + d] = static_cast<float>(acc);
    }
  }
}

}  // namespace kvengine
