// The paged decode attention benchmark (`kvengine bench attention`, docs/bench-attention.md):
// one decode token's query against one layer's K/V at a given context length, for each KV dtype,
// thread count and layout (paged in shuffled pool order vs contiguous per head), timed through
// PagedAttentionBatch. Each row reports the KV bytes read per second and their ratio to the
// machine's streaming read bandwidth measured in the same run with the same thread count.
//
// Threading: RunAttentionBench creates its own thread pools; call it from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention/attention_kernel.h"
#include "kvengine/status.h"
#include "bench/perf/read_bandwidth.h"
#include "bench/perf/bench_progress.h"
#include "bench/perf/synthetic_kv_layer.h"
#include "quant/kv_dtype.h"

namespace kvengine {

// One way of running the kernel that a sweep point is timed with: where it prefetches and how
// many KV heads a work item takes.
struct AttentionBenchSetting {
  KvPrefetchLevel prefetch = KvPrefetchLevel::kL1;
  int item_heads = 0;  // AttentionKernels::kv_heads_per_item: 0 = PagedAttentionBatch's choice.
  bool operator==(const AttentionBenchSetting&) const = default;
};
// "auto" for 0, else the count (the --item-heads spelling, and the JSON field's).
std::string ItemHeadsName(int item_heads);

struct AttentionBenchOptions {
  std::vector<int64_t> contexts = {1024, 4096, 16384, 32768};
  std::vector<KvDtype> kv_dtypes = {KvDtype::kF16, KvDtype::kBF16, KvDtype::kFp8E4M3,
                                    KvDtype::kInt8, KvDtype::kInt4};
  std::vector<int> threads = {1, 2};
  std::vector<KvLayout> layouts = {KvLayout::kPaged, KvLayout::kContiguous};
  // Where the kernel prefetches the KV ahead (attention_kernel.h); empty: this CPU's default.
  std::vector<KvPrefetchLevel> prefetch_levels;
  // KV heads per work item (AttentionKernels::kv_heads_per_item, 0: PagedAttentionBatch's
  // choice); empty: {0}.
  std::vector<int> item_heads;
  // The shape: Llama-3-8B-like GQA.
  int n_heads = 32;
  int num_kv_heads = 8;
  int head_dim = 128;
  int block_size = 16;  // Paged layout.
  // Every row times calls until both limits are reached (after warm-up calls).
  double min_seconds = 0.3;
  int min_iterations = 5;
  // Passes over the whole sweep; each row reports its fastest (machines are noisy: alternating
  // the rows spreads a slow spell over all of them, and the fastest run is the least disturbed).
  int rounds = 1;
  // Copies of the layer's KV cycled through, enough for at least this many bytes, so that each
  // call reads from DRAM as a decode step over many layers does: 4x the last-level cache, at
  // least 192 MiB (BeyondLastLevelCacheBytes, bench/perf/read_bandwidth.h).
  static constexpr uint64_t kMinFootprintBytes = uint64_t{192} << 20;
  uint64_t footprint_bytes = BeyondLastLevelCacheBytes(kMinFootprintBytes);
  // Measured before the rows and again after the timing of each (dtype, context, threads)
  // point, whose layouts and settings are timed together, their calls alternating
  // (read_bw.row_min_seconds): a row's fraction is of the figure after its point.
  ReadBandwidthOptions read_bw;
  uint64_t seed = 1;

  static constexpr const char* kContextsHelp =
      "Context lengths (tokens of KV the query attends to)";
  static constexpr const char* kKvDtypesHelp =
      "KV dtypes (f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4)";
  static constexpr const char* kThreadsHelp =
      "Thread counts; the read bandwidth is measured with each";
  static constexpr const char* kLayoutsHelp =
      "paged: blocks of --block-size in shuffled pool order; contiguous: one block per head";
  static constexpr const char* kPrefetchHelp =
      "Where the kernel prefetches the KV ahead: auto (this CPU's default: l1 where the L1 data "
      "cache holds >= 48 KiB, else l2), l1, l2";
  static constexpr const char* kItemHeadsHelp =
      "KV heads per work item: auto (PagedAttentionBatch's choice: all of them for paged blocks "
      "whose per-head runs are short, else one), or a count";
  static constexpr const char* kMinTimeHelp = "Seconds to time each row at least";
  static constexpr const char* kRoundsHelp =
      "Passes over the whole sweep; each row reports its fastest pass (with that pass's read "
      "bandwidth)";
  static constexpr const char* kFootprintHelp =
      "Cycle through copies of the KV totalling at least this many bytes; auto: 4x the "
      "last-level cache, at least 192MiB";
};

struct AttentionBenchRow {
  KvDtype kv_dtype = KvDtype::kF16;
  int64_t context = 0;
  int threads = 1;
  KvLayout layout = KvLayout::kPaged;
  KvPrefetchLevel prefetch = KvPrefetchLevel::kL1;
  int item_heads = 0;               // The setting asked for (0: auto) ...
  int kv_heads_per_item = 0;        // ... and what the call planned (PlannedKvHeadsPerItem).
  AttentionBenchSetting setting() const { return {prefetch, item_heads}; }
  int block_size = 0;               // 16 (paged) or the context (contiguous).
  std::string kernel;               // The attention kernel that ran (AttentionKernels).
  std::string arithmetic;           // "int16" or "f32" (AttentionArithmetic).
  int copies = 0;                   // KV copies cycled through.
  int64_t iterations = 0;           // Timed calls (of the fastest of options.rounds passes).
  double seconds = 0;               // Their total wall time (steady clock).
  uint64_t kv_bytes_per_token = 0;  // K/V data + scales one call reads (padding excluded).
  double us_per_token = 0;
  double tokens_per_s = 0;      // Calls per second: one layer's attention for one decode token.
  double kv_gb_per_s = 0;       // kv_bytes_per_token * tokens_per_s / 1e9.
  double read_bw_gb_per_s = 0;  // Measured with `threads` threads right after this row.
  // KV GB/s if the call's f32 multiply-adds (n_heads x context x (head_dim_k + head_dim_v)) all
  // ran at the peak measured with `threads` threads: the compute ceiling of a kernel that turns
  // every element into f32 (the int8 and int4 VNNI paths do two or four products per lane and
  // may exceed it).
  double fma_ceiling_gb_per_s = 0;
  // f16 KV only (else 0): the same ceiling at the rate of multiply-adds fed by f16 conversions
  // (MeasureF16FmaPeakGmacs, one conversion per 4), the arithmetic an f16 row cannot avoid.
  double f16_fma_ceiling_gb_per_s = 0;
  double fraction_of_read_bw = 0;
};

struct AttentionBenchResult {
  AttentionBenchOptions options;
  // (threads, GB/s), measured before the rows (each row has its own, measured after the timing
  // of its dtype, context and thread count).
  std::vector<std::pair<int, double>> read_bw_gb_per_s;
  // Per thread count (read_bw_gb_per_s's order): the runs per thread the probe reads with
  // (ReadBandwidthProbe::Streams, the fastest of kReadStreamCounts on this machine).
  std::vector<int> read_bw_streams;
  std::vector<double> fma_peak_gmacs;  // Per thread count: G f32 multiply-adds/s (fma_peak.h).
  // Per thread count: the same fed by f16 conversions (MeasureF16FmaPeakGmacs).
  std::vector<double> f16_fma_peak_gmacs;
  // As run: the options' prefetch levels (or the default) x their item heads (or auto),
  // prefetch-major.
  std::vector<AttentionBenchSetting> settings;
  std::vector<AttentionBenchRow> rows;  // dtype-major, then context, layout, threads, setting.
  bool varies_prefetch() const;    // Whether the settings have more than one prefetch level ...
  bool varies_item_heads() const;  // ... or item heads.
};

// "prefetch into l2, KV heads per item 1": the parts of `s` that vary in the run (may be empty).
std::string SettingLabel(const AttentionBenchResult& r, const AttentionBenchSetting& s);

// progress(done, total) after each row (the rows of one dtype and context come together).
Result<AttentionBenchResult> RunAttentionBench(const AttentionBenchOptions& options,
                                               const BenchProgress& progress = {});

// f16's K or V row bytes over `dtype`'s (data and scales) at head_dim: the tokens/s over f16
// that attention bound by memory would reach (int8 about 1.97, int4 3.2 at 128).
double KvBytesRatioOverF16(KvDtype dtype, int head_dim);

}  // namespace kvengine
