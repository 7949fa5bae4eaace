#include "perf/attention_bench.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "attention/paged_attention.h"
#include "base/thread_pool.h"
#include "kernels/fma_peak.h"

namespace kvengine {
namespace {

struct Timing {
  int64_t iterations = 0;
  double seconds = 0;
};

// Times PagedAttentionBatch for one decode query at position context - 1, cycling through the
// layer's copies; a few untimed calls first (thread wake-up, page-table walks).
Timing TimeAttention(const SyntheticKvLayer& layer, int n_heads, const AttentionBenchOptions& o,
                     const AttentionKernels& kernels, ThreadPool& pool) {
  const SyntheticKvSpec& spec = layer.spec();
  // q: [n_heads][head_dim]; out: [n_heads][head_dim].
  std::vector<float> q(size_t(n_heads) * size_t(spec.head_dim));
  std::vector<float> out(q.size());
  std::mt19937 rng(uint32_t(o.seed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : q) x = normal(rng);
  const float scale = 1.0f / std::sqrt(float(spec.head_dim));
  auto call = [&](int64_t i) {
    const AttentionQuery query{layer.block_table(int(i % spec.copies)), q.data(), spec.context - 1,
                               out.data()};
    PagedAttentionBatchWith(kernels, layer.view(), std::span(&query, 1), n_heads, scale, &pool);
  };
  const int warmup = std::min(spec.copies, 3);
  for (int i = 0; i < warmup; ++i) call(i);
  Timing t;
  const auto t0 = std::chrono::steady_clock::now();
  while (t.iterations < o.min_iterations || t.seconds < o.min_seconds) {
    call(warmup + t.iterations);
    ++t.iterations;
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

// One row: `layer` timed with `pool` at prefetch `level`, the read bandwidth measured right
// after, and the compute ceilings at the peaks measured with the same pool.
Result<AttentionBenchRow> MeasureRow(const AttentionBenchOptions& o, const SyntheticKvLayer& layer,
                                     KvPrefetchLevel level, ThreadPool& pool,
                                     const ReadBandwidthProbe& probe, double fma_peak,
                                     double f16_fma_peak) {
  AttentionKernels kernels = DefaultAttentionKernels();
  kernels.prefetch = level;
  const Timing t = TimeAttention(layer, o.n_heads, o, kernels, pool);
  KV_ASSIGN_OR_RETURN(const double row_bw, probe.Measure(pool, o.read_bw.row_min_seconds, 1));
  const SyntheticKvSpec& spec = layer.spec();
  AttentionBenchRow row;
  row.kv_dtype = spec.dtype;
  row.context = spec.context;
  row.threads = pool.num_threads();
  row.layout = spec.layout;
  row.prefetch = level;
  row.block_size = layer.view().block_size;
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
  if (o.rounds < 1 || o.rounds > 100) return InvalidArgument("rounds must be 1..100");
  if (!(o.min_seconds >= 0) || o.min_iterations < 1) {
    return InvalidArgument("the minimum time must be >= 0 and the minimum iterations >= 1");
  }
  return Status::Ok();
}

// One pass over the sweep (dtype-major, then context, layout, threads, prefetch level): every
// row, in that order, to keep(row). r holds the peaks measured per thread count.
template <class Keep>
Status SweepOnce(const AttentionBenchOptions& o, const AttentionBenchResult& r,
                 const std::vector<std::unique_ptr<ThreadPool>>& pools,
                 const ReadBandwidthProbe& probe, const Keep& keep) {
  for (KvDtype dtype : o.kv_dtypes) {
    for (int64_t context : o.contexts) {
      for (KvLayout layout : o.layouts) {
        KV_ASSIGN_OR_RETURN(const SyntheticKvLayer layer, BuildLayer(o, dtype, context, layout));
        for (size_t ti = 0; ti < o.threads.size(); ++ti) {
          for (KvPrefetchLevel level : r.prefetch_levels) {
            KV_ASSIGN_OR_RETURN(AttentionBenchRow row,
                                MeasureRow(o, layer, level, *pools[ti], probe, r.fma_peak_gmacs[ti],
                                           r.f16_fma_peak_gmacs[ti]));
            keep(row);
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<AttentionBenchResult> RunAttentionBench(const AttentionBenchOptions& o,
                                               const BenchProgress& progress) {
  KV_RETURN_IF_ERROR(Validate(o));
  AttentionBenchResult r;
  r.options = o;
  r.prefetch_levels = o.prefetch_levels;
  if (r.prefetch_levels.empty()) r.prefetch_levels.push_back(DefaultKvPrefetchLevel());
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
    r.fma_peak_gmacs.push_back(MeasureFmaPeakGmacs(*pools[ti]));
    r.f16_fma_peak_gmacs.push_back(MeasureF16FmaPeakGmacs(*pools[ti]));
  }
  const int64_t per_round = int64_t(o.kv_dtypes.size() * o.contexts.size() * o.layouts.size() *
                                    o.threads.size() * r.prefetch_levels.size());
  const int64_t total = per_round * o.rounds;
  int64_t done = 0;
  if (progress) progress(0, total);
  // Rounds over the whole sweep (each builds its layers anew: they do not all fit in memory at
  // once); a row keeps its fastest round, with that round's read bandwidth.
  for (int round = 0; round < o.rounds; ++round) {
    size_t at = 0;  // The row this measurement is, in the sweep's order.
    const auto keep = [&](const AttentionBenchRow& row) {
      if (round == 0) {
        r.rows.push_back(row);
      } else if (row.us_per_token < r.rows[at].us_per_token) {
        r.rows[at] = row;
      }
      ++at;
      if (progress) progress(++done, total);
    };
    KV_RETURN_IF_ERROR(SweepOnce(o, r, pools, probe, keep));
  }
  return r;
}

}  // namespace kvengine
