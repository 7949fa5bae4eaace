#include "kernels/attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "kernels/attention/attention_kernel.h"

namespace kvengine {

VisibleRange VisiblePositions(const KvLayerView& kv, int64_t pos) {
  VisibleRange r;
  if (kv.window > 0) r.lo = std::max<int64_t>(0, pos - kv.window + 1);
  r.sinks = std::min<int64_t>(kv.sink_tokens, r.lo);
  return r;
}

namespace {

// Split-K: positions are cut into partitions [j * kPartitionPositions, (j + 1) * ...); one work
// item per (query, run of KV heads, partition that holds visible positions). The boundaries
// depend on positions only, and partial states are always merged in ascending partition order, so
// a result never depends on the thread count or the batch. Contexts up to this size are one
// partition (no merge cost beyond one normalization). Why 2048: at a 32k context with 8 KV heads
// it gives 128 (query, KV head, partition) pieces, plenty to balance 2 (or 16) threads, while an
// item stays long enough (64 chunks) that its setup, the first chunk's unprefetched rows and the
// merge are noise. 1024 measured within noise at 32k (paged a few % faster, contiguous a few %
// slower; 1 and 2 threads).
constexpr int64_t kPartitionPositions = 2048;
// Per-item cost beyond its positions, in positions (setup, q copy, merge): for load balancing.
constexpr int64_t kItemOverhead = 16;
// KV heads per item (HeadsPerItem). A block holds each KV head's rows of its positions as one run
// of block_size rows, the heads' runs side by side (paged_attention.h). An item of one KV head
// reads one run per block and jumps to the next block of its table, in no particular pool order;
// runs shorter than this (16 rows of f16 x 128 are 4 KiB) are read at a fraction of the rate of a
// long stream. An item of all the KV heads reads each block's runs one after another (the kernel
// takes the heads in turn per chunk), H times longer. Measured at 32k, 8 KV heads x 128, paged
// blocks of 16 in shuffled order on Zen 3: see docs/notes/attention-kernel.md ("KV heads per
// work item").
constexpr size_t kShortRunBytes = 16 << 10;
// Items per thread below which HeadsPerItem splits the KV heads further, for load balance.
constexpr int64_t kMinItemsPerThread = 4;

// How many consecutive KV heads one item takes (the rest of a partition's heads go to further
// items). Which item computes a KV head never changes its bits (attention_kernel.h).
int HeadsPerItem(const KvLayerView& kv, int64_t partitions, int threads) {
  const int heads = kv.num_kv_heads;
  const size_t run = size_t(kv.block_size) * std::max(kv.k_row_bytes, kv.v_row_bytes);
  if (run >= kShortRunBytes || heads == 1) return 1;
  if (threads <= 1) return heads;
  // Split the heads into enough runs that the items number kMinItemsPerThread per thread.
  const int64_t wanted = kMinItemsPerThread * threads;
  const int64_t parts = std::max<int64_t>(partitions, 1);
  const int64_t splits = std::clamp<int64_t>((wanted + parts - 1) / parts, 1, heads);
  return int((heads + splits - 1) / splits);
}

// Partitions [first, last] of q's visible positions (some may hold none: between the sinks and
// the window).
struct PartRange {
  int64_t ranges[2][2];
  int64_t first = 0, last = 0;
};
PartRange PartitionsOf(const KvLayerView& kv, const AttentionQuery& q) {
  const VisibleRange r = VisiblePositions(kv, q.pos);
  PartRange p{{{0, r.sinks}, {r.lo, q.pos + 1}}};
  p.first = r.sinks > 0 ? 0 : r.lo / kPartitionPositions;
  p.last = q.pos / kPartitionPositions;
  return p;
}

// One planned item: which query, where its partial state goes, its cost for scheduling.
struct PlannedItem {
  AttentionItem item;
  int32_t query = 0;
  int64_t state = 0;  // Offset of its partial states in the batch's state buffer.
  int64_t cost = 0;
};

// A (query, KV head) whose partial states first_state + j * part_stride (j < parts) are merged
// into out.
struct MergeTask {
  int64_t first_state = 0;
  int64_t part_stride = 0;
  int parts = 0;
  float* out = nullptr;  // [group][dv] of the query's output.
};

// The batch's plan; kept per calling thread and reused, so steady-state decoding allocates nothing.
struct BatchPlan {
  std::vector<PlannedItem> items;
  std::vector<MergeTask> merges;
  std::vector<float> states;
};

// Appends `q`'s items and their merge tasks. The query's partial states are laid out partition
// major ([partition][KV head]), as are its items (the KV heads of partition j, then j + 1): an
// item's KV heads' states are adjacent, as the kernel writes them.
void PlanQuery(const KvLayerView& kv, const AttentionQuery& q, int32_t qi, int n_heads, float scale,
               int heads_per_item, BatchPlan* plan, int64_t* state_floats) {
  const int group = n_heads / kv.num_kv_heads;
  const int heads = kv.num_kv_heads;
  const int64_t stride = int64_t(PartialStateFloats(group, kv.head_dim_v));
  const PartRange pr = PartitionsOf(kv, q);
  const int64_t first_state = *state_floats;
  int parts = 0;
  for (int64_t j = pr.first; j <= pr.last; ++j) {
    const int64_t p0 = j * kPartitionPositions, p1 = p0 + kPartitionPositions;
    PlannedItem it;
    it.item.block_table = q.block_table;
    it.item.group = group;
    it.item.scale = scale;
    int64_t count = 0;
    for (int k = 0; k < 2; ++k) {
      it.item.begin[k] = std::max(pr.ranges[k][0], p0);
      it.item.end[k] = std::max(it.item.begin[k], std::min(pr.ranges[k][1], p1));
      count += it.item.end[k] - it.item.begin[k];
    }
    if (count == 0) continue;  // A partition between the sinks and the window.
    it.query = qi;
    for (int kh = 0; kh < heads; kh += heads_per_item) {
      it.item.kv_head = kh;
      it.item.kv_heads = std::min(heads_per_item, heads - kh);
      it.item.q = q.q + size_t(kh) * size_t(group) * size_t(kv.head_dim_k);
      it.state = first_state + (int64_t(parts) * heads + kh) * stride;
      it.cost = count * it.item.kv_heads + kItemOverhead;
      plan->items.push_back(it);
    }
    ++parts;
  }
  *state_floats += int64_t(parts) * heads * stride;
  for (int kh = 0; kh < heads; ++kh) {
    plan->merges.push_back({first_state + kh * stride, heads * stride, parts,
                            q.out + size_t(kh) * size_t(group) * size_t(kv.head_dim_v)});
  }
}

// out[g][d] = sum_j acc_j[g][d] w_j / sum_j l_j[g] w_j, w_j = e^(m_j[g] - max_j m_j[g]), over the
// parts in ascending order (one part: acc / l).
void Merge(const MergeTask& t, const float* states, int group, int dv) {
  const auto part = [&](int j) { return states + size_t(t.first_state + j * t.part_stride); };
  for (int g = 0; g < group; ++g) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < t.parts; ++j) mx = std::max(mx, part(j)[g]);
    float* out = t.out + size_t(g) * size_t(dv);
    float sum = 0;
    for (int j = 0; j < t.parts; ++j) {
      const float* st = part(j);
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
                    int n_heads, int64_t pos, float scale, float* out) {
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

int PlannedKvHeadsPerItem(const AttentionKernels& kernels, const KvLayerView& kv,
                          std::span<const AttentionQuery> queries, ThreadPool* pool) {
  if (kernels.kv_heads_per_item > 0) return std::min(kernels.kv_heads_per_item, kv.num_kv_heads);
  int64_t partitions = 0;
  for (const AttentionQuery& q : queries) {
    const PartRange pr = PartitionsOf(kv, q);
    partitions += pr.last - pr.first + 1;
  }
  return HeadsPerItem(kv, partitions, pool == nullptr ? 1 : pool->num_threads());
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
  const int heads_per_item = PlannedKvHeadsPerItem(kernels, kv, queries, pool);
  int64_t state_floats = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    PlanQuery(kv, queries[i], int32_t(i), n_heads, scale, heads_per_item, &plan, &state_floats);
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
