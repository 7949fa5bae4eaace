#include "bench/perf/attention_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/paged_attention.h"
#include "base/thread_pool.h"
#include "bench/perf/fma_peak.h"
#include "bench/perf/bench_rounds.h"

namespace kvengine {
namespace {

struct Timing {
  int64_t iterations = 0;
  double seconds = 0;
};

// One measured variant of a sweep point: a layer (its layout) and the kernels (their setting).
struct Variant {
  const SyntheticKvLayer* layer;
  AttentionKernels kernels;
};

// The decode query of `v` at `copy` (position context - 1).
AttentionQuery QueryOf(const Variant& v, int64_t copy, const float* q, float* out) {
  const SyntheticKvLayer& layer = *v.layer;
  return {layer.block_table(int(copy % layer.spec().copies)), q, layer.spec().context - 1, out};
}

// Times PagedAttentionBatch for one decode query at position context - 1 with every variant,
// their calls alternating one by one (so that a slow spell of the machine falls on all of them
// alike), until every variant has both limits of its own; a few untimed calls of each first
// (thread wake-up, page-table walks). Every call takes the next copy of its layer's KV, counted
// per layer: the variants of one layer (its settings) take turns over its copies, so no call
// finds in cache the copy the call before it read. (Until 2026-12-02 each variant counted its
// own calls, and the second setting of a layer read the copy the first had just read: at 4k f16
// a copy is 16 MiB, inside a 32 MiB L3, and the second of two identical settings ran 1.3-1.4x
// faster.) The variants share the context and head dims.
std::vector<Timing> TimeAttention(const std::vector<Variant>& variants, int n_heads,
                                  const AttentionBenchOptions& o, ThreadPool& pool) {
  const SyntheticKvSpec& spec = variants[0].layer->spec();
  // q: [n_heads][head_dim]; out: [n_heads][head_dim].
  std::vector<float> q(size_t(n_heads) * size_t(spec.head_dim));
  std::vector<float> out(q.size());
  std::mt19937 rng(uint32_t(o.seed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : q) x = normal(rng);
  const float scale = 1.0f / std::sqrt(float(spec.head_dim));
  std::map<const SyntheticKvLayer*, int64_t> next_copy;  // Calls so far, per layer.
  auto call = [&](const Variant& v) {
    const AttentionQuery query = QueryOf(v, next_copy[v.layer]++, q.data(), out.data());
    PagedAttentionBatchWith(v.kernels, v.layer->view(), std::span(&query, 1), n_heads, scale,
                            &pool);
  };
  int warmup = 0;
  for (const Variant& v : variants) {
    warmup = std::max(warmup, std::min(v.layer->spec().copies, 3));
  }
  for (int i = 0; i < warmup; ++i) {
    for (const Variant& v : variants) call(v);
  }
  std::vector<Timing> t(variants.size());
  const auto done = [&] {
    for (const Timing& x : t) {
      if (x.iterations < o.min_iterations || x.seconds < o.min_seconds) return false;
    }
    return true;
  };
  while (!done()) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      call(variants[k]);
      t[k].seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++t[k].iterations;
    }
  }
  return t;
}

// The layer of one (dtype, context, layout) point of the sweep, with enough copies of its KV to
// cover the footprint (sized from the one-copy storage).
Result<SyntheticKvLayer> BuildLayer(const AttentionBenchOptions& o, KvDtype dtype, int64_t context,
                                    KvLayout layout) {
  SyntheticKvSpec spec;
  spec.dtype = dtype;
  spec.num_kv_heads = o.num_kv_heads;
  spec.head_dim = o.head_dim;
  spec.context = context;
  spec.layout = layout;
  spec.block_size = o.block_size;
  spec.seed = o.seed;
  const KvLayerView one = SingleLayerView(dtype, o.num_kv_heads, o.head_dim,
                                          layout == KvLayout::kPaged ? o.block_size : 1);
  const uint64_t copy_bytes =
      uint64_t(one.bytes_per_block) * uint64_t((context + one.block_size - 1) / one.block_size);
  spec.copies = int(std::clamp<uint64_t>(
      (o.footprint_bytes + copy_bytes - 1) / std::max<uint64_t>(copy_bytes, 1), 1, 65536));
  return SyntheticKvLayer::Build(spec);
}

// The row of variant `v` from its timing, the read bandwidth measured after it, and the compute
// ceilings at the peaks measured with `pool`.
AttentionBenchRow MakeRow(const AttentionBenchOptions& o, const Variant& v, const Timing& t,
                          ThreadPool& pool, double row_bw, double fma_peak, double f16_fma_peak) {
  const SyntheticKvLayer& layer = *v.layer;
  const SyntheticKvSpec& spec = layer.spec();
  AttentionBenchRow row;
  row.kv_dtype = spec.dtype;
  row.context = spec.context;
  row.threads = pool.num_threads();
  row.layout = spec.layout;
  row.prefetch = v.kernels.prefetch;
  row.item_heads = v.kernels.kv_heads_per_item;
  const AttentionQuery query = QueryOf(v, 0, nullptr, nullptr);
  row.kv_heads_per_item =
      PlannedKvHeadsPerItem(v.kernels, layer.view(), std::span(&query, 1), &pool);
  row.block_size = layer.view().block_size;
  row.kernel = v.kernels.target_name;
  row.arithmetic = AttentionArithmetic(v.kernels, layer.view());
  row.copies = spec.copies;
  row.iterations = t.iterations;
  row.seconds = t.seconds;
  row.kv_bytes_per_token = layer.kv_bytes_per_query();
  row.us_per_token = t.seconds / double(t.iterations) * 1e6;
  row.tokens_per_s = double(t.iterations) / t.seconds;
  row.kv_gb_per_s = double(row.kv_bytes_per_token) * row.tokens_per_s / 1e9;
  row.read_bw_gb_per_s = row_bw;
  row.fraction_of_read_bw = row.kv_gb_per_s / row.read_bw_gb_per_s;
  const double macs = double(o.n_heads) * double(spec.context) * 2.0 * double(o.head_dim);
  row.fma_ceiling_gb_per_s = fma_peak * double(row.kv_bytes_per_token) / macs;
  if (spec.dtype == KvDtype::kF16) {
    row.f16_fma_ceiling_gb_per_s = f16_fma_peak * double(row.kv_bytes_per_token) / macs;
  }
  return row;
}

Status Validate(const AttentionBenchOptions& o) {
  if (o.contexts.empty() || o.kv_dtypes.empty() || o.threads.empty() || o.layouts.empty()) {
    return InvalidArgument(
        "the sweep is empty: give at least one context, dtype, thread count "
        "and layout");
  }
  for (int t : o.threads) {
    if (t < 1 || t > 1024) return InvalidArgument("thread counts must be 1..1024");
  }
  if (o.n_heads < 1 || o.num_kv_heads < 1 || o.n_heads % o.num_kv_heads != 0) {
    return InvalidArgument("query heads must be a positive multiple of KV heads");
  }
  for (int h : o.item_heads) {
    if (h < 0 || h > o.num_kv_heads) {
      return InvalidArgument("KV heads per item must be 0 (auto) .. the KV heads");
    }
  }
  if (o.rounds < 1 || o.rounds > 100) return InvalidArgument("rounds must be 1..100");
  if (!(o.min_seconds >= 0) || o.min_iterations < 1) {
    return InvalidArgument("the minimum time must be >= 0 and the minimum iterations >= 1");
  }
  return Status::Ok();
}

// One pass over the sweep: every row, in the order dtype, context, layout, threads, setting, to
// keep(row). The layouts and settings of one (dtype, context, threads) point are
// timed together, their calls alternating (TimeAttention), and share the read bandwidth measured
// after them. r holds the peaks measured per thread count.
template <class Keep>
Status SweepOnce(const AttentionBenchOptions& o, const AttentionBenchResult& r,
                 const std::vector<std::unique_ptr<ThreadPool>>& pools, ReadBandwidthProbe& probe,
                 const Keep& keep) {
  const size_t n_layouts = o.layouts.size(), n_levels = r.settings.size();
  for (KvDtype dtype : o.kv_dtypes) {
    for (int64_t context : o.contexts) {
      std::vector<SyntheticKvLayer> layers;
      for (KvLayout layout : o.layouts) {
        KV_ASSIGN_OR_RETURN(SyntheticKvLayer layer, BuildLayer(o, dtype, context, layout));
        layers.push_back(std::move(layer));
      }
      std::vector<Variant> variants;  // [layout][setting]
      for (const SyntheticKvLayer& layer : layers) {
        for (const AttentionBenchSetting& setting : r.settings) {
          AttentionKernels kernels = DefaultAttentionKernels();
          kernels.prefetch = setting.prefetch;
          kernels.kv_heads_per_item = setting.item_heads;
          variants.push_back({&layer, kernels});
        }
      }
      std::vector<AttentionBenchRow> rows(n_layouts * o.threads.size() * n_levels);
      for (size_t ti = 0; ti < o.threads.size(); ++ti) {
        const std::vector<Timing> t = TimeAttention(variants, o.n_heads, o, *pools[ti]);
        KV_ASSIGN_OR_RETURN(const double bw,
                            probe.Measure(*pools[ti], o.read_bw.row_min_seconds, 1));
        for (size_t li = 0; li < n_layouts; ++li) {
          for (size_t pi = 0; pi < n_levels; ++pi) {
            const size_t v = li * n_levels + pi;
            rows[(li * o.threads.size() + ti) * n_levels + pi] =
                MakeRow(o, variants[v], t[v], *pools[ti], bw, r.fma_peak_gmacs[ti],
                        r.f16_fma_peak_gmacs[ti]);
          }
        }
      }
      for (const AttentionBenchRow& row : rows) keep(row);
    }
  }
  return Status::Ok();
}

}  // namespace

bool AttentionBenchResult::varies_prefetch() const {
  for (const AttentionBenchSetting& s : settings) {
    if (s.prefetch != settings[0].prefetch) return true;
  }
  return false;
}

bool AttentionBenchResult::varies_item_heads() const {
  for (const AttentionBenchSetting& s : settings) {
    if (s.item_heads != settings[0].item_heads) return true;
  }
  return false;
}

std::string ItemHeadsName(int item_heads) {
  return item_heads == 0 ? std::string("auto") : std::to_string(item_heads);
}

std::string SettingLabel(const AttentionBenchResult& r, const AttentionBenchSetting& s) {
  std::string label;
  if (r.varies_prefetch()) label = "prefetch into " + std::string(KvPrefetchLevelName(s.prefetch));
  if (r.varies_item_heads()) {
    label += (label.empty() ? "" : ", ") + std::string("KV heads per item ") +
             ItemHeadsName(s.item_heads);
  }
  return label;
}

Result<AttentionBenchResult> RunAttentionBench(const AttentionBenchOptions& o,
                                               const BenchProgress& progress) {
  KV_RETURN_IF_ERROR(Validate(o));
  AttentionBenchResult r;
  r.options = o;
  std::vector<KvPrefetchLevel> levels = o.prefetch_levels;
  if (levels.empty()) levels.push_back(DefaultKvPrefetchLevel());
  std::vector<int> item_heads = o.item_heads;
  if (item_heads.empty()) item_heads.push_back(0);
  for (KvPrefetchLevel level : levels) {
    for (int heads : item_heads) r.settings.push_back({level, heads});
  }
  // One pool per thread count for the whole run; the bandwidth of each, measured first (the
  // header's figures) and then again after every row (the row's), over one buffer.
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t : o.threads) pools.push_back(std::make_unique<ThreadPool>(t));
  KV_ASSIGN_OR_RETURN(ReadBandwidthProbe probe,
                      ReadBandwidthProbe::Create(o.read_bw.bytes, pools.back().get()));
  for (size_t ti = 0; ti < o.threads.size(); ++ti) {
    const int t = o.threads[ti];
    KV_ASSIGN_OR_RETURN(double bw,
                        probe.Measure(*pools[ti], o.read_bw.min_seconds, o.read_bw.min_passes));
    r.read_bw_gb_per_s.emplace_back(t, bw);
    KV_ASSIGN_OR_RETURN(const int streams, probe.Streams(*pools[ti]));
    r.read_bw_streams.push_back(streams);
    r.fma_peak_gmacs.push_back(MeasureFmaPeakGmacs(*pools[ti]));
    r.f16_fma_peak_gmacs.push_back(MeasureF16FmaPeakGmacs(*pools[ti]));
  }
  const int64_t per_round = int64_t(o.kv_dtypes.size() * o.contexts.size() * o.layouts.size() *
                                    o.threads.size() * r.settings.size());
  const int64_t total = per_round * o.rounds;
  int64_t done = 0;
  if (progress) progress(0, total);
  // Rounds over the whole sweep (each builds its layers anew: they do not all fit in memory at
  // once); a row keeps its fastest round, with that round's read bandwidth.
  for (int round = 0; round < o.rounds; ++round) {
    size_t at = 0;  // The row this measurement is, in the sweep's order.
    const auto keep = [&](const AttentionBenchRow& row) {
      KeepFastestRound(r.rows, at++, round, row,
                       [](const AttentionBenchRow& x) { return x.us_per_token; });
      if (progress) progress(++done, total);
    };
    KV_RETURN_IF_ERROR(SweepOnce(o, r, pools, probe, keep));
  }
  return r;
}

}  // namespace kvengine
