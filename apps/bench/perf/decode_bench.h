// The model decode benchmark (`kvengine bench decode`, docs/bench-decode.md): drives
// Model::Forward directly over a KvCacheManager sized for the run and measures
//   prefill   tokens/s of one prompt run from an empty cache, in chunks of prefill_chunk;
//   decode    steady-state tokens/s of `steps` decode steps (after warm-up steps) of `batch`
//             sequences that already hold `depth` tokens of KV each.
// To reach a depth quickly the KV of those `depth` positions is filled with random rows
// (KvCacheManager::WriteKv for every layer) instead of running the prompt: attention reads the
// same bytes whatever their values. Each row states the bytes one step reads (weights + KV) and
// the rate that implies, beside the read bandwidth measured in the same run with the same pool.
//
// Threading: call from one thread; the model's kernels fan out to the given pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "bench/perf/read_bandwidth.h"
#include "model/model.h"
#include "bench/perf/bench_progress.h"
#include "quant/kv_dtype.h"

namespace kvengine {

struct DecodeBenchOptions {
  std::vector<KvDtype> kv_dtypes = {KvDtype::kF16, KvDtype::kInt8};
  std::vector<int64_t> depths = {0, 4096, 16384};  // Decode of one sequence at each depth.
  std::vector<int> batches = {1, 4, 16};           // Batched decode, every sequence at ...
  int64_t batch_depth = 0;                         // ... this depth.
  int64_t prompt_tokens = 512;                     // Prefill measurement (0: none).
  int64_t prefill_chunk = 512;                     // Prompt tokens per forward pass.
  int steps = 16;                                  // Timed decode steps per row.
  int warmup_steps = 1;                            // Untimed steps before them.
  int rounds = 1;  // Passes over each dtype's rows (prefill included); the fastest is kept.
  int block_size = 16;
  uint64_t seed = 1;
  ReadBandwidthOptions read_bw;  // Before the rows and after each (read_bw.row_min_seconds).

  static constexpr const char* kDepthsHelp =
      "KV depths (tokens already in the cache) for single-sequence decode";
  static constexpr const char* kBatchesHelp = "Sequences decoded together (at --batch-depth)";
  static constexpr const char* kBatchDepthHelp = "KV depth of every sequence of the batched rows";
  static constexpr const char* kPromptHelp = "Prompt tokens of the prefill measurement (0: none)";
  static constexpr const char* kStepsHelp = "Timed decode steps per row (after the warm-up step)";
  static constexpr const char* kRoundsHelp =
      "Passes over each KV dtype's rows and prefill; each reports its fastest pass (with the read "
      "bandwidth measured after that pass's row)";
};

struct DecodeBenchRow {
  KvDtype kv_dtype = KvDtype::kF16;
  int64_t depth = 0;  // KV tokens per sequence before the first (warm-up) step.
  int batch = 1;
  int steps = 0;                   // Timed steps.
  double seconds = 0;              // Their wall time.
  double decode_tokens_per_s = 0;  // batch * steps / seconds (all sequences together).
  double step_ms = 0;
  bool kv_filled_randomly = false;  // depth > 0: the KV was written, not computed.
  // Prefill from an empty cache, on the (depth 0, batch 1) row of each dtype (else on the
  // dtype's first row); prefill_tokens == 0 where not measured.
  int64_t prefill_tokens = 0;
  double prefill_tokens_per_s = 0;
  // Bytes one decode step reads: the weights (the file's tensor bytes; of the token embedding
  // only `batch` rows unless it doubles as the output projection) and the KV every sequence
  // attends to, averaged over the timed steps (data + scales, padding excluded).
  uint64_t weight_bytes_per_step = 0;
  uint64_t kv_bytes_per_step = 0;
  double implied_gb_per_s = 0;     // (weights + KV) per step * steps / s / 1e9.
  double read_bw_gb_per_s = 0;     // Measured with the same pool right after this row's steps
                                   // (of its fastest round).
  double fraction_of_read_bw = 0;  // implied_gb_per_s / read_bw_gb_per_s.
  // The arithmetic side: multiply-adds of the weight matrices per decoded token
  // (DecodeWeightMacs; attention's are not counted), their rate at this row's tokens/s, and
  // the f32 multiply-add peak measured with the same pool right after the row
  // (bench/perf/fma_peak.h).
  uint64_t weight_macs_per_token = 0;
  double weight_gmacs_per_s = 0;  // weight_macs_per_token * decode_tokens_per_s / 1e9.
  double fma_peak_gmacs = 0;
  double fraction_of_fma_peak = 0;  // weight_gmacs_per_s / fma_peak_gmacs.
  // The same for the prefill, where measured (its peak measured right after its fastest pass).
  double prefill_weight_gmacs_per_s = 0;
  double prefill_fma_peak_gmacs = 0;
  double prefill_fraction_of_fma_peak = 0;
};

struct DecodeBenchResult {
  DecodeBenchOptions options;
  std::string model;
  int threads = 0;
  std::string weight_kernel;         // The matmuls' kernel target (ActiveKernelTarget(), "AVX2").
  std::string attention_kernel;      // DefaultAttentionKernels()' ("AVX2_I16": int8 KV in int16).
  double read_bw_gb_per_s = 0;       // With the same pool, before the rows (each row has its own).
  int read_bw_streams = 0;           // Runs per thread of the probe (ReadBandwidthProbe::Streams).
  double fma_peak_gmacs = 0;         // Likewise: f32 multiply-adds per second / 1e9.
  std::vector<DecodeBenchRow> rows;  // Per dtype: the depths, then the batches.
};

// Weight bytes one decode step of `batch` tokens reads from `file` (see DecodeBenchRow).
uint64_t DecodeWeightBytes(const GgufFile& file, int batch);

// Multiply-adds of `file`'s weight matrices for one token: `layers`, every 2-D tensor but the
// token embedding and the output projection (one multiply-add per element), and `output`, the
// output projection's (the token embedding's where it doubles as the output). A decoded token
// costs layers + output; a prefill chunk computes the output for its last token only.
struct WeightMacs {
  uint64_t layers = 0;
  uint64_t output = 0;
};
WeightMacs DecodeWeightMacs(const GgufFile& file);

// `file` is the model's GGUF (for weight bytes). progress(done, total): after each measurement.
Result<DecodeBenchResult> RunDecodeBench(const Model& model, const GgufFile& file, ThreadPool& pool,
                                         const DecodeBenchOptions& options,
                                         const BenchProgress& progress = {});

}  // namespace kvengine
