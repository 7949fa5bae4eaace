#include "attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention/attention_kernel.h"
#include "base/check.h"
#include "base/cpu_features.h"

namespace kvengine {

VisibleRange VisiblePositions(const KvLayerView& kv, int64_t pos) {
  VisibleRange r;
  if (kv.window > 0) r.lo = std::max<int64_t>(0, pos - kv.window + 1);
  r.sinks = std::min<int64_t>(kv.sink_tokens, r.lo);
  return r;
}

namespace {

// Split-K: positions are cut into partitions [j * kPartitionPositions, (j + 1) * ...); one work
// item per (query, KV head, partition that holds visible positions). The boundaries depend on
// positions only, and partial states are always merged in ascending partition order, so a result
// never depends on the thread count or the batch. Contexts up to this size are one item per KV
// head (no merge cost beyond one normalization). Why 2048: at a 32k context with 8 KV heads it
// gives 128 equal items, plenty to balance 2 (or 16) threads, while an item stays long enough
// (64 chunks) that its setup, the first chunk's unprefetched rows and the merge are noise. 1024
// measured within noise at 32k (paged a few % faster, contiguous a few % slower; 1 and 2 threads).
constexpr int64_t kPartitionPositions = 2048;
// Per-item cost beyond its positions, in positions (setup, q copy, merge): for load balancing.
constexpr int64_t kItemOverhead = 16;

// One planned item: which query, where its partial state goes, its cost for scheduling.
struct PlannedItem {
  AttentionItem item;
  int32_t query = 0;
  int64_t state = 0;  // Offset of its partial state in the batch's state buffer.
  int64_t cost = 0;
};

// A (query, KV head) whose partial states [first_state, + parts * stride) are merged into out.
struct MergeTask {
  int64_t first_state = 0;
  int parts = 0;
  float* out = nullptr;  // [group][dv] of the query's output.
};

// The batch's plan; kept per calling thread and reused, so steady-state decoding allocates nothing.
struct BatchPlan {
  std::vector<PlannedItem> items;
  std::vector<MergeTask> merges;
  std::vector<float> states;
};

// Appends `q`'s items and their merge tasks. Partial states are laid out KV head major
// (partitions ascending, what Merge reads); the items themselves are ordered partition major
// (all KV heads of partition j, then j + 1), so that consecutive items -- on one thread -- read
// neighbouring rows of the same blocks: a paged block holds every KV head's rows of its 16
// positions, and the lines the hardware prefetchers fetch past one head's run are the next
// head's, used while they are still in cache. (Execution order never changes a result.)
void PlanQuery(const KvLayerView& kv, const AttentionQuery& q, int32_t qi, int n_heads, float scale,
               BatchPlan* plan, int64_t* state_floats) {
  const size_t first_item = plan->items.size();
  const int group = n_heads / kv.num_kv_heads;
  const int64_t stride = int64_t(PartialStateFloats(group, kv.head_dim_v));
  const VisibleRange r = VisiblePositions(kv, q.pos);
  const int64_t ranges[2][2] = {{0, r.sinks}, {r.lo, q.pos + 1}};
  const int64_t first_part = r.sinks > 0 ? 0 : r.lo / kPartitionPositions;
  const int64_t last_part = q.pos / kPartitionPositions;
  for (int kh = 0; kh < kv.num_kv_heads; ++kh) {
    MergeTask merge{*state_floats, 0, q.out + size_t(kh) * size_t(group) * size_t(kv.head_dim_v)};
    for (int64_t j = first_part; j <= last_part; ++j) {
      const int64_t p0 = j * kPartitionPositions, p1 = p0 + kPartitionPositions;
      PlannedItem it;
      it.item.block_table = q.block_table;
      it.item.q = q.q + size_t(kh) * size_t(group) * size_t(kv.head_dim_k);
      it.item.kv_head = kh;
      it.item.group = group;
      it.item.scale = scale;
      int64_t count = 0;
      for (int k = 0; k < 2; ++k) {
        it.item.begin[k] = std::max(ranges[k][0], p0);
        it.item.end[k] = std::max(it.item.begin[k], std::min(ranges[k][1], p1));
        count += it.item.end[k] - it.item.begin[k];
      }
      if (count == 0) continue;  // A partition between the sinks and the window.
      it.query = qi;
      it.state = *state_floats;
      it.cost = count + kItemOverhead;
      *state_floats += stride;
      ++merge.parts;
      plan->items.push_back(it);
    }
    plan->merges.push_back(merge);
  }
  // Every KV head has the same partitions (they depend on positions only): transpose the
  // [head][part] items to [part][head].
  const size_t heads = size_t(kv.num_kv_heads);
  const size_t parts = (plan->items.size() - first_item) / heads;
  thread_local std::vector<PlannedItem> by_head;
  by_head.assign(plan->items.begin() + long(first_item), plan->items.end());
  for (size_t h = 0; h < heads; ++h) {
    for (size_t j = 0; j < parts; ++j)
      plan->items[first_item + j * heads + h] = by_head[h * parts + j];
  }
}

// out[g][d] = sum_j acc_j[g][d] w_j / sum_j l_j[g] w_j, w_j = e^(m_j[g] - max_j m_j[g]), over the
// parts in ascending order (one part: acc / l).
void Merge(const MergeTask& t, const float* states, int group, int dv) {
  const size_t stride = PartialStateFloats(group, dv);
  for (int g = 0; g < group; ++g) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < t.parts; ++j)
      mx = std::max(mx, states[size_t(t.first_state) + j * stride + size_t(g)]);
    float* out = t.out + size_t(g) * size_t(dv);
    float sum = 0;
    for (int j = 0; j < t.parts; ++j) {
      const float* st = states + size_t(t.first_state) + j * stride;
      const float w = std::exp(st[g] - mx);
      sum += st[group + g] * w;
      const float* acc = st + 2 * size_t(group) + size_t(g) * size_t(dv);
      if (j == 0) {
        for (int d = 0; d < dv; ++d) out[d] = acc[d] * w;
      } else {
        for (int d = 0; d < dv; ++d) out[d] += acc[d] * w;
      }
    }
    const float inv = 1.0f / sum;
    for (int d = 0; d < dv; ++d) out[d] *= inv;
  }
}

// Runs f(begin, end) over [0, n) split in cost-balanced contiguous ranges, one per thread (which
// thread runs which range does not affect results).
template <class F>
void RunBalanced(ThreadPool* pool, int64_t n, const std::vector<int64_t>& prefix_cost, F f) {
  const int64_t threads = pool == nullptr ? 1 : std::min<int64_t>(pool->num_threads(), n);
  if (threads <= 1) {
    f(0, n);
    return;
  }
  const int64_t total = prefix_cost[size_t(n)];
  // Range c holds the items whose cost midpoint falls in [c * total / threads, (c+1) * ...).
  const auto bound = [&](int64_t c) {
    const int64_t target = c * total / threads;
    int64_t lo = 0;
    while (lo < n &&
           prefix_cost[size_t(lo)] * 2 + (prefix_cost[size_t(lo) + 1] - prefix_cost[size_t(lo)]) <
               2 * target) {
      ++lo;
    }
    return lo;
  };
  pool->ParallelFor(threads, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) f(bound(c), bound(c + 1));
  });
}

}  // namespace

void PagedAttention(const KvLayerView& kv, std::span<const int32_t> table, const float* q,
                    int n_heads, int64_t pos, float scale, float* out, float* /*scratch*/) {
  const AttentionQuery query{table, q, pos, out};
  PagedAttentionBatch(kv, std::span<const AttentionQuery>(&query, 1), n_heads, scale, nullptr);
}

const char* KvPrefetchLevelName(KvPrefetchLevel level) {
  return level == KvPrefetchLevel::kL2 ? "l2" : "l1";
}

KvPrefetchLevel DefaultKvPrefetchLevel() {
  static const KvPrefetchLevel level = [] {
    const long l1 = L1DataCacheBytes();
    return l1 == 0 || l1 >= kL1PrefetchMinBytes ? KvPrefetchLevel::kL1 : KvPrefetchLevel::kL2;
  }();
  return level;
}

void PagedAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                         int n_heads, float scale, ThreadPool* pool) {
  PagedAttentionBatchWith(DefaultAttentionKernels(), kv, queries, n_heads, scale, pool);
}

void PagedAttentionBatchWith(const AttentionKernels& kernels, const KvLayerView& kv,
                             std::span<const AttentionQuery> queries, int n_heads, float scale,
                             ThreadPool* pool) {
  KV_CHECK(kv.num_kv_heads > 0 && n_heads % kv.num_kv_heads == 0)
      << n_heads << " query heads for " << kv.num_kv_heads << " KV heads";
  const int group = n_heads / kv.num_kv_heads;
  thread_local BatchPlan plan;
  thread_local std::vector<int64_t> prefix;
  plan.items.clear();
  plan.merges.clear();
  int64_t state_floats = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    PlanQuery(kv, queries[i], int32_t(i), n_heads, scale, &plan, &state_floats);
  }
  if (plan.states.size() < size_t(state_floats)) plan.states.resize(size_t(state_floats));
  float* states = plan.states.data();
  const int64_t n_items = int64_t(plan.items.size());
  prefix.assign(size_t(n_items) + 1, 0);
  for (int64_t i = 0; i < n_items; ++i)
    prefix[size_t(i) + 1] = prefix[size_t(i)] + plan.items[size_t(i)].cost;
  const PlannedItem* items = plan.items.data();
  RunBalanced(pool, n_items, prefix, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      kernels.partial(kv, items[i].item, kernels.prefetch, states + items[i].state);
    }
  });
  // Merge (or, for one part, normalize) each (query, KV head): cheap; split by count.
  const int64_t n_merges = int64_t(plan.merges.size());
  const MergeTask* merges = plan.merges.data();
  const auto merge = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) Merge(merges[i], states, group, kv.head_dim_v);
  };
  if (pool == nullptr || n_merges < 64) {
    merge(0, n_merges);
  } else {
    pool->ParallelFor(n_merges, merge);
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
      for (size_t i = 0; i < ts.size(); ++i)
        acc += s[i] / sum * v[(size_t(ts[i]) * nkv + kh) * dv + d];
      out[size_t(h) * dv + d] = static_cast<float>(acc);
    }
  }
}

}  // namespace kvengine
