// The scalar reference item kernel (attention_kernel.h): decode every row with the reference
// codec, scores and sums in double, one plain softmax over the item's positions.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/attention_kernel.h"
#include "quant/codec_ref.h"

namespace kvengine {
namespace {

// One KV head's state (item.kv_heads == 1).
void PartialRefHead(const KvLayerView& kv, const AttentionItem& item, float* state) {
  const size_t dk = size_t(kv.head_dim_k), dv = size_t(kv.head_dim_v);
  const size_t group = size_t(item.group);
  ItemRowWalker walk(kv, item);
  const int64_t n = walk.remaining();
  std::vector<KvRowRefs> rows(static_cast<size_t>(n));
  walk.Next(int(n), rows.data());
  std::vector<float> k(dk), v(dv);
  std::vector<double> s(group * size_t(n));  // s[g][i] = q_g . k_i * scale
  for (size_t i = 0; i < size_t(n); ++i) {
    ref::DecodeRow(kv.k_dtype, rows[i].k_data, rows[i].k_scale, int(dk), k.data());
    for (size_t g = 0; g < group; ++g) {
      double dot = 0;
      for (size_t d = 0; d < dk; ++d) dot += double(item.q[g * dk + d]) * double(k[d]);
      s[g * size_t(n) + i] = dot * double(item.scale);
    }
  }
  float* m = state;
  float* l = state + group;
  float* acc = state + 2 * group;
  std::vector<double> a(group * dv, 0.0);
  for (size_t g = 0; g < group; ++g) {
    double* sg = s.data() + g * size_t(n);
    const double mx = *std::max_element(sg, sg + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (sg[i] = std::exp(sg[i] - mx));
    m[g] = float(mx);
    l[g] = float(sum);
  }
  for (size_t i = 0; i < size_t(n); ++i) {
    ref::DecodeRow(kv.v_dtype, rows[i].v_data, rows[i].v_scale, int(dv), v.data());
    for (size_t g = 0; g < group; ++g) {
      const double p = s[g * size_t(n) + i];
      for (size_t d = 0; d < dv; ++d) a[g * dv + d] += p * double(v[d]);
    }
  }
  for (size_t i = 0; i < group * dv; ++i) acc[i] = float(a[i]);
}

void PartialRef(const KvLayerView& kv, const AttentionItem& item, KvPrefetchLevel, float* state) {
  for (int j = 0; j < item.kv_heads; ++j) {
    AttentionItem one = item;
    one.kv_head = item.kv_head + j;
    one.kv_heads = 1;
    one.q = item.q + size_t(j) * size_t(item.group) * size_t(kv.head_dim_k);
    PartialRefHead(kv, one, state + size_t(j) * PartialStateFloats(item.group, kv.head_dim_v));
  }
}

}  // namespace

AttentionKernels ReferenceAttentionKernels() { return {"ref", 0, &PartialRef}; }

}  // namespace kvengine
