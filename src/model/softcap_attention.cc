#include "model/softcap_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "quant/codec.h"

namespace kvengine {
namespace {

// Row addresses of (KV head kh, position t) in the sequence's blocks.
struct RowAt {
  const uint8_t* k_data;
  const uint8_t* k_scale;
  const uint8_t* v_data;
  const uint8_t* v_scale;
};

RowAt Row(const KvLayerView& kv, std::span<const int32_t> table, int kh, int64_t t) {
  const int64_t j = t / kv.block_size;
  KV_CHECK(j < int64_t(table.size()) && table[size_t(j)] >= 0)
      << "position " << t << " is not in the block table";
  const uint8_t* block = kv.pool + size_t(table[size_t(j)]) * kv.bytes_per_block;
  const size_t row = size_t(kh) * size_t(kv.block_size) + size_t(t % kv.block_size);
  return {block + kv.k_data + row * kv.k_row_bytes, block + kv.k_scale + row * kv.k_scale_bytes,
          block + kv.v_data + row * kv.v_row_bytes, block + kv.v_scale + row * kv.v_scale_bytes};
}

// One query, every head. Scratch: k/v rows [dk], [dv]; scores [group][positions] in double.
void SoftcapQuery(const KvLayerView& kv, const AttentionQuery& q, int n_heads, float scale,
                  float cap) {
  const int group = n_heads / kv.num_kv_heads;
  const size_t dk = size_t(kv.head_dim_k), dv = size_t(kv.head_dim_v);
  const VisibleRange r = VisiblePositions(kv, q.pos);
  std::vector<int64_t> positions;  // Ascending: sinks, then lo .. pos.
  positions.reserve(size_t(r.count(q.pos)));
  for (int64_t t = 0; t < r.sinks; ++t) positions.push_back(t);
  for (int64_t t = r.lo; t <= q.pos; ++t) positions.push_back(t);
  const size_t n = positions.size();
  std::vector<float> k(dk), v(dv);
  std::vector<double> s(size_t(group) * n), acc(size_t(group) * dv);
  for (int kh = 0; kh < kv.num_kv_heads; ++kh) {
    const float* qh = q.q + size_t(kh) * size_t(group) * dk;  // [group][dk]
    for (size_t i = 0; i < n; ++i) {
      const RowAt row = Row(kv, q.block_table, kh, positions[i]);
      DecodeRow(kv.k_dtype, row.k_data, row.k_scale, int(dk), k.data());
      for (int g = 0; g < group; ++g) {
        double dot = 0;
        for (size_t d = 0; d < dk; ++d) dot += double(qh[size_t(g) * dk + d]) * double(k[d]);
        s[size_t(g) * n + i] = double(cap) * std::tanh(dot * double(scale) / double(cap));
      }
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    std::vector<double> sum(size_t(group), 0.0);
    for (int g = 0; g < group; ++g) {
      double* sg = s.data() + size_t(g) * n;
      const double mx = *std::max_element(sg, sg + n);
      for (size_t i = 0; i < n; ++i) sum[size_t(g)] += (sg[i] = std::exp(sg[i] - mx));
    }
    for (size_t i = 0; i < n; ++i) {
      const RowAt row = Row(kv, q.block_table, kh, positions[i]);
      DecodeRow(kv.v_dtype, row.v_data, row.v_scale, int(dv), v.data());
      for (int g = 0; g < group; ++g) {
        const double p = s[size_t(g) * n + i];
        for (size_t d = 0; d < dv; ++d) acc[size_t(g) * dv + d] += p * double(v[d]);
      }
    }
    float* out = q.out + size_t(kh) * size_t(group) * dv;  // [group][dv]
    for (int g = 0; g < group; ++g) {
      for (size_t d = 0; d < dv; ++d) {
        out[size_t(g) * dv + d] = float(acc[size_t(g) * dv + d] / sum[size_t(g)]);
      }
    }
  }
}

}  // namespace

void SoftCappedAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                              int n_heads, float scale, float cap, ThreadPool* pool) {
  KV_CHECK(cap > 0 && kv.num_kv_heads >= 1 && n_heads % kv.num_kv_heads == 0)
      << "cap " << cap << ", " << n_heads << " heads over " << kv.num_kv_heads << " KV heads";
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) SoftcapQuery(kv, queries[size_t(i)], n_heads, scale, cap);
  };
  if (pool == nullptr) {
    run(0, int64_t(queries.size()));
  } else {
    pool->ParallelFor(int64_t(queries.size()), run);
  }
}

}  // namespace kvengine
