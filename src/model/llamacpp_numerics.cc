#include "model/llamacpp_numerics.h"

#include <cmath>
#include <limits>
#include <vector>

#include "base/check.h"
#include "quant/codec.h"
#include "quant/half.h"

namespace kvengine {
namespace {

float RoundF16(float x) { return F16ToF32(F32ToF16(x)); }

// K and V of every position a query sees, decoded to f32 (exact for f16 rows), ascending:
// k [n][dk], v [n][dv].
struct VisibleRows {
  std::vector<float> k, v;
  size_t n = 0;
};

VisibleRows ReadVisible(const KvLayerView& kv, const AttentionQuery& q, int kh) {
  const size_t dk = size_t(kv.head_dim_k), dv = size_t(kv.head_dim_v);
  const VisibleRange r = VisiblePositions(kv, q.pos);
  VisibleRows rows;
  rows.n = size_t(r.count(q.pos));
  rows.k.resize(rows.n * dk);
  rows.v.resize(rows.n * dv);
  size_t i = 0;
  auto read = [&](int64_t t) {
    const int64_t j = t / kv.block_size;
    KV_CHECK(j < int64_t(q.block_table.size()) && q.block_table[size_t(j)] >= 0)
        << "position " << t << " is not in the block table";
    const uint8_t* block = kv.pool + size_t(q.block_table[size_t(j)]) * kv.bytes_per_block;
    const size_t row = size_t(kh) * size_t(kv.block_size) + size_t(t % kv.block_size);
    DecodeRow(kv.k_dtype, block + kv.k_data + row * kv.k_row_bytes, nullptr, kv.head_dim_k,
              rows.k.data() + i * dk);
    DecodeRow(kv.v_dtype, block + kv.v_data + row * kv.v_row_bytes, nullptr, kv.head_dim_v,
              rows.v.data() + i * dv);
    ++i;
  };
  for (int64_t t = 0; t < r.sinks; ++t) read(t);  // Sinks, then lo .. pos.
  for (int64_t t = r.lo; t <= q.pos; ++t) read(t);
  return rows;
}

// One head: q16 [dk] (f16 values), out [dv]. See the header for the steps.
void FlashHead(const VisibleRows& rows, const float* q16, size_t dk, size_t dv, float scale,
               float cap, float* out) {
  std::vector<float> acc(dv, 0.0f);  // f16 values only.
  float m = -std::numeric_limits<float>::infinity();
  float sum = 0;
  for (size_t i = 0; i < rows.n; ++i) {
    const float* k = rows.k.data() + i * dk;
    float s = 0;
    for (size_t d = 0; d < dk; ++d) s += q16[d] * k[d];  // Products of f16 values are exact.
    s = cap > 0 ? cap * std::tanh(s * (scale / cap)) : s * scale;
    float ms = 1.0f, w = 1.0f;
    if (s > m) {
      ms = std::exp(m - s);
      m = s;
      for (float& a : acc) a = RoundF16(a * ms);
    } else {
      w = std::exp(s - m);
    }
    const float* v = rows.v.data() + i * dv;
    for (size_t d = 0; d < dv; ++d) acc[d] = RoundF16(std::fma(v[d], w, acc[d]));
    sum = sum * ms + w;
  }
  const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (size_t d = 0; d < dv; ++d) out[d] = acc[d] * inv;
}

void LlamaCppQuery(const KvLayerView& kv, const AttentionQuery& q, int n_heads, float scale,
                   float cap) {
  const int group = n_heads / kv.num_kv_heads;
  const size_t dk = size_t(kv.head_dim_k), dv = size_t(kv.head_dim_v);
  std::vector<float> q16(dk);
  for (int kh = 0; kh < kv.num_kv_heads; ++kh) {
    const VisibleRows rows = ReadVisible(kv, q, kh);
    for (int g = 0; g < group; ++g) {
      const size_t h = size_t(kh) * size_t(group) + size_t(g);  // Query head h reads KV head kh.
      for (size_t d = 0; d < dk; ++d) q16[d] = RoundF16(q.q[h * dk + d]);
      FlashHead(rows, q16.data(), dk, dv, scale, cap, q.out + h * dv);
    }
  }
}

}  // namespace

void LlamaCppRopeCosSin(int64_t pos, const LayerRope& rope, float* cos_sin) {
  const RopeParams& p = rope.params;
  const int half = p.n_rot / 2;
  const float theta_scale = std::pow(p.theta, -2.0f / float(p.n_rot));
  float theta = float(pos);  // pos * theta_scale^i, one f32 rounding per pair.
  for (int i = 0; i < half; ++i) {
    const float ff = rope.freq_factors.empty() ? 1.0f : rope.freq_factors[size_t(i)];
    const float angle = p.freq_scale * (theta / ff);
    cos_sin[i] = std::cos(angle);
    cos_sin[half + i] = std::sin(angle);
    theta *= theta_scale;
  }
}

void LlamaCppFlashAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                                 int n_heads, float scale, float cap, ThreadPool* pool) {
  KV_CHECK(kv.k_dtype == KvDtype::kF16 && kv.v_dtype == KvDtype::kF16)
      << "llama.cpp's attention rounding is modelled for an f16 KV cache, not "
      << KvDtypeName(kv.k_dtype) << " / " << KvDtypeName(kv.v_dtype);
  KV_CHECK(cap >= 0 && kv.num_kv_heads >= 1 && n_heads % kv.num_kv_heads == 0)
      << "cap " << cap << ", " << n_heads << " heads over " << kv.num_kv_heads << " KV heads";
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      LlamaCppQuery(kv, queries[size_t(i)], n_heads, scale, cap);
    }
  };
  if (pool == nullptr) {
    run(0, int64_t(queries.size()));
  } else {
    pool->ParallelFor(int64_t(queries.size()), run);
  }
}

}  // namespace kvengine
