#include "bench/perf/decode_bench.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "kernels/attention/attention_kernel.h"
#include "base/clock.h"
#include "bench/perf/fma_peak.h"
#include "kernels/kernel_target.h"
#include "kv/kv_cache_manager.h"
#include "model/kv_groups.h"
#include "bench/perf/bench_rounds.h"

namespace kvengine {
namespace {

struct Config {
  int64_t depth = 0;
  int batch = 1;
};

// The row configurations of one dtype: every depth at batch 1, then every batch at batch_depth
// (a configuration listed twice runs once).
std::vector<Config> Configs(const DecodeBenchOptions& o) {
  std::vector<Config> c;
  auto add = [&c](int64_t d, int b) {
    for (const Config& x : c) {
      if (x.depth == d && x.batch == b) return;
    }
    c.push_back({d, b});
  };
  for (int64_t d : o.depths) add(d, 1);
  for (int b : o.batches) add(o.batch_depth, b);
  return c;
}

// One dtype's KV cache and the model over it. Sequence ids are fresh for every measurement.
class Runner {
 public:
  Runner(const Model& model, ThreadPool& pool, KvCacheManager& kv, uint64_t seed)
      : model_(model), pool_(pool), kv_(kv), rng_(seed) {
    // noise_: random K/V rows are windows of this table (normal(0, 1)).
    std::normal_distribution<float> normal(0.0f, 1.0f);
    size_t row = 0;
    for (int g = 0; g < kv.num_groups(); ++g) {
      const KvGroupSpec& s = kv.group(g).spec();
      row = std::max(row, size_t(s.num_kv_heads) * size_t(std::max(s.head_dim_k, s.head_dim_v)));
    }
    noise_.resize(kNoise + row);
    for (float& x : noise_) x = normal(rng_);
  }

  // Adds `n` sequences holding `depth` tokens each of random KV.
  Result<std::vector<SeqId>> AddFilled(int n, int64_t depth) {
    std::vector<SeqId> seqs;
    for (int i = 0; i < n; ++i) {
      const SeqId id = next_id_++;
      KV_RETURN_IF_ERROR(kv_.AddSequence(id));
      seqs.push_back(id);
      if (depth == 0) continue;
      const std::vector<int32_t> toks = RandomTokens(depth);
      if (!kv_.Append(id, toks).ok) return OutOfRange("the KV pool cannot hold the depth");
      for (int64_t pos = 0; pos < depth; ++pos) {
        for (int layer = 0; layer < model_.config().n_layers; ++layer) {
          kv_.WriteKv(id, layer, pos, Noise(), Noise());
        }
      }
      KV_RETURN_IF_ERROR(kv_.MarkComputed(id, depth));
    }
    return seqs;
  }

  // One decode step: a random token appended to every sequence, one Forward over all of them.
  Status Step(const std::vector<SeqId>& seqs) {
    tokens_ = RandomTokens(int64_t(seqs.size()));
    std::vector<SeqChunk> chunks;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!kv_.Append(seqs[i], std::span(&tokens_[i], 1)).ok) {
        return OutOfRange("the KV pool is full");
      }
      chunks.push_back({seqs[i], kv_.NumTokens(seqs[i]) - 1, std::span(&tokens_[i], 1), false});
    }
    KV_RETURN_IF_ERROR(model_.Forward(chunks, kv_, pool_, &out_));
    for (SeqId s : seqs) KV_RETURN_IF_ERROR(kv_.MarkComputed(s, kv_.NumTokens(s)));
    return Status::Ok();
  }

  // Seconds to run a prompt of `n` random tokens from an empty cache, `chunk` tokens a pass.
  Result<double> Prefill(int64_t n, int64_t chunk) {
    const SeqId id = next_id_++;
    KV_RETURN_IF_ERROR(kv_.AddSequence(id));
    const std::vector<int32_t> prompt = RandomTokens(n);
    const auto t0 = std::chrono::steady_clock::now();
    if (!kv_.Append(id, prompt).ok) return OutOfRange("the KV pool cannot hold the prompt");
    for (int64_t pos = 0; pos < n; pos += chunk) {
      const int64_t len = std::min(chunk, n - pos);
      const SeqChunk c{id, pos, std::span(prompt).subspan(size_t(pos), size_t(len)), false};
      KV_RETURN_IF_ERROR(model_.Forward(std::span(&c, 1), kv_, pool_, &out_));
      KV_RETURN_IF_ERROR(kv_.MarkComputed(id, pos + len));
    }
    const double s = SecondsSince(t0);
    kv_.Release(id);
    return s;
  }

  void Release(const std::vector<SeqId>& seqs) {
    for (SeqId s : seqs) kv_.Release(s);
  }

 private:
  static constexpr size_t kNoise = size_t{1} << 16;

  const float* Noise() { return noise_.data() + rng_() % kNoise; }

  std::vector<int32_t> RandomTokens(int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& x : t) x = int32_t(rng_() % uint64_t(model_.n_vocab()));
    return t;
  }

  const Model& model_;
  ThreadPool& pool_;
  KvCacheManager& kv_;
  std::mt19937_64 rng_;
  std::vector<float> noise_;
  std::vector<int32_t> tokens_;
  ForwardOutput out_;
  SeqId next_id_ = 1;
};

// KV bytes one step reads for `batch` sequences whose tokens attend to `visible` positions on
// average (a windowed group sees at most window + sinks of them).
uint64_t KvBytesPerStep(const KvCacheManager& kv, int batch, double visible) {
  double bytes = 0;
  for (int g = 0; g < kv.num_groups(); ++g) {
    const KvGroup& grp = kv.group(g);
    uint64_t per_block = 0;
    for (uint64_t b : grp.layout().bytes_by_dtype()) per_block += b;
    const KvGroupSpec& s = grp.spec();
    const double v = s.windowed() ? std::min(visible, double(s.window + s.sink_tokens)) : visible;
    bytes += v * double(per_block) / double(kv.block_size());
  }
  return uint64_t(bytes * batch);
}

Status Validate(const DecodeBenchOptions& o) {
  if (o.kv_dtypes.empty() || (o.depths.empty() && o.batches.empty())) {
    return InvalidArgument("the sweep is empty: give at least one dtype and one depth or batch");
  }
  for (int64_t d : o.depths) {
    if (d < 0) return InvalidArgument("depths must be >= 0");
  }
  for (int b : o.batches) {
    if (b < 1 || b > 4096) return InvalidArgument("batches must be 1..4096");
  }
  if (o.batch_depth < 0 || o.prompt_tokens < 0 || o.prefill_chunk < 1 || o.steps < 1 ||
      o.warmup_steps < 0) {
    return InvalidArgument("batch depth and prompt must be >= 0, chunk and steps >= 1");
  }
  if (o.rounds < 1 || o.rounds > 100) return InvalidArgument("rounds must be 1..100");
  return Status::Ok();
}

// One row: `c.batch` sequences at `c.depth`, the warm-up and timed steps, then the read bandwidth.
Result<DecodeBenchRow> MeasureRow(Runner& run, const KvCacheManager& kv, ReadBandwidthProbe& probe,
                                  ThreadPool& pool, const GgufFile& file,
                                  const DecodeBenchOptions& o, KvDtype dtype, const Config& c) {
  KV_ASSIGN_OR_RETURN(std::vector<SeqId> seqs, run.AddFilled(c.batch, c.depth));
  for (int i = 0; i < o.warmup_steps; ++i) KV_RETURN_IF_ERROR(run.Step(seqs));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) KV_RETURN_IF_ERROR(run.Step(seqs));
  const double s = SecondsSince(t0);
  run.Release(seqs);
  KV_ASSIGN_OR_RETURN(const double row_bw, probe.Measure(pool, o.read_bw.row_min_seconds, 1));
  const double row_peak = MeasureFmaPeakGmacs(pool);
  DecodeBenchRow row;
  row.kv_dtype = dtype;
  row.depth = c.depth;
  row.batch = c.batch;
  row.steps = o.steps;
  row.seconds = s;
  row.decode_tokens_per_s = double(c.batch) * o.steps / s;
  row.step_ms = s / o.steps * 1e3;
  row.kv_filled_randomly = c.depth > 0;
  row.weight_bytes_per_step = DecodeWeightBytes(file, c.batch);
  // A step at position p attends to p + 1 positions; the timed steps run at
  // p = depth + warmup .. depth + warmup + steps - 1.
  const double visible = double(c.depth + o.warmup_steps) + double(o.steps - 1) / 2 + 1;
  row.kv_bytes_per_step = KvBytesPerStep(kv, c.batch, visible);
  row.implied_gb_per_s =
      double(row.weight_bytes_per_step + row.kv_bytes_per_step) * o.steps / s / 1e9;
  row.read_bw_gb_per_s = row_bw;
  row.fraction_of_read_bw = row.implied_gb_per_s / row_bw;
  const WeightMacs macs = DecodeWeightMacs(file);
  row.weight_macs_per_token = macs.layers + macs.output;
  row.weight_gmacs_per_s = double(row.weight_macs_per_token) * row.decode_tokens_per_s / 1e9;
  row.fma_peak_gmacs = row_peak;
  row.fraction_of_fma_peak = row.weight_gmacs_per_s / row_peak;
  return row;
}

}  // namespace

uint64_t DecodeWeightBytes(const GgufFile& file, int batch) {
  uint64_t bytes = 0;
  const GgufTensor* embd = file.FindTensor("token_embd.weight");
  const bool tied = file.FindTensor("output.weight") == nullptr;
  for (const GgufTensor& t : file.tensors()) {
    if (&t == embd && !tied) {
      bytes += t.byte_size / uint64_t(std::max<int64_t>(t.dims[1], 1)) * uint64_t(batch);
    } else {
      bytes += t.byte_size;
    }
  }
  return bytes;
}

WeightMacs DecodeWeightMacs(const GgufFile& file) {
  const GgufTensor* embd = file.FindTensor("token_embd.weight");
  const GgufTensor* out = file.FindTensor("output.weight");
  if (out == nullptr) out = embd;  // Tied: the embedding is the output projection too.
  WeightMacs m;
  for (const GgufTensor& t : file.tensors()) {
    if (t.n_dims != 2) continue;  // Norms, biases: no matrix product.
    const uint64_t elements = uint64_t(t.dims[0]) * uint64_t(t.dims[1]);
    if (&t == out) {
      m.output = elements;
    } else if (&t != embd) {
      m.layers += elements;
    }
  }
  return m;
}

Result<DecodeBenchResult> RunDecodeBench(const Model& model, const GgufFile& file, ThreadPool& pool,
                                         const DecodeBenchOptions& o,
                                         const BenchProgress& progress) {
  KV_RETURN_IF_ERROR(Validate(o));
  DecodeBenchResult r;
  r.options = o;
  r.model = model.config().name;
  r.threads = pool.num_threads();
  r.weight_kernel = ActiveKernelTarget();
  r.attention_kernel = DefaultAttentionKernels().target_name;
  // The read bandwidth before the rows (the header's figure) and after each row (the row's),
  // over one buffer.
  KV_ASSIGN_OR_RETURN(ReadBandwidthProbe probe, ReadBandwidthProbe::Create(o.read_bw.bytes, &pool));
  KV_ASSIGN_OR_RETURN(r.read_bw_gb_per_s,
                      probe.Measure(pool, o.read_bw.min_seconds, o.read_bw.min_passes));
  KV_ASSIGN_OR_RETURN(r.read_bw_streams, probe.Streams(pool));
  r.fma_peak_gmacs = MeasureFmaPeakGmacs(pool);
  const std::vector<Config> configs = Configs(o);
  // Blocks every group needs for the largest measurement (+1 per sequence for a partial block).
  const int64_t extra = o.warmup_steps + o.steps;
  int64_t blocks = (std::max<int64_t>(o.prompt_tokens, 1) + o.block_size - 1) / o.block_size + 1;
  int64_t max_len = std::max<int64_t>(o.prompt_tokens, 1);
  for (const Config& c : configs) {
    blocks = std::max(blocks, c.batch * ((c.depth + extra + o.block_size - 1) / o.block_size + 1));
    max_len = std::max(max_len, c.depth + extra);
  }
  if (max_len > model.config().context_length) {
    return OutOfRange("depth + steps (" + std::to_string(max_len) +
                      ") exceed the model's context (" +
                      std::to_string(model.config().context_length) + ")");
  }
  const int64_t total =
      int64_t(o.kv_dtypes.size() * (configs.size() + (o.prompt_tokens > 0))) * o.rounds;
  int64_t done = 0;
  if (progress) progress(0, total);
  for (KvDtype dtype : o.kv_dtypes) {
    KvCacheConfig kc;
    KV_ASSIGN_OR_RETURN(kc.groups, BuildKvGroups(model.config(), UniformDtypes(dtype)));
    kc.block_size = o.block_size;
    kc.num_blocks = int32_t(std::min<int64_t>(blocks, INT32_MAX));
    kc.max_model_len = max_len;
    kc.enable_prefix_caching = false;
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCacheManager> kv, KvCacheManager::Create(kc));
    Runner run(model, pool, *kv, o.seed);
    {  // Untimed: pages in the weights (file-mapped) and the first KV blocks, and runs the
       // multi-token path once.
      KV_ASSIGN_OR_RETURN(std::vector<SeqId> warm, run.AddFilled(1, 0));
      KV_RETURN_IF_ERROR(run.Step(warm));
      run.Release(warm);
      if (o.prompt_tokens > 0) {
        KV_RETURN_IF_ERROR(
            run.Prefill(std::min<int64_t>(o.prompt_tokens, 16), o.prefill_chunk).status());
      }
    }
    // Each round runs the prefill and every row again; a row keeps its fastest round.
    const size_t first_row = r.rows.size();
    double prefill_s = 0, prefill_peak = 0;
    for (int round = 0; round < o.rounds; ++round) {
      if (o.prompt_tokens > 0) {
        KV_ASSIGN_OR_RETURN(const double s, run.Prefill(o.prompt_tokens, o.prefill_chunk));
        const double peak = MeasureFmaPeakGmacs(pool);
        if (round == 0 || s < prefill_s) {
          prefill_s = s;
          prefill_peak = peak;
        }
        if (progress) progress(++done, total);
      }
      for (size_t i = 0; i < configs.size(); ++i) {
        KV_ASSIGN_OR_RETURN(DecodeBenchRow row,
                            MeasureRow(run, *kv, probe, pool, file, o, dtype, configs[i]));
        KeepFastestRound(r.rows, first_row + i, round, row,
                         [](const DecodeBenchRow& x) { return x.step_ms; });
        if (progress) progress(++done, total);
      }
    }
    if (o.prompt_tokens > 0 && r.rows.size() > first_row) {
      size_t at = first_row;
      for (size_t i = first_row; i < r.rows.size(); ++i) {
        if (r.rows[i].depth == 0 && r.rows[i].batch == 1) at = i;
      }
      DecodeBenchRow& row = r.rows[at];
      row.prefill_tokens = o.prompt_tokens;
      row.prefill_tokens_per_s = double(o.prompt_tokens) / prefill_s;
      // Every prompt token through the layers, one output projection per chunk.
      const WeightMacs macs = DecodeWeightMacs(file);
      const int64_t chunks = (o.prompt_tokens + o.prefill_chunk - 1) / o.prefill_chunk;
      const double prefill_macs =
          double(macs.layers) * double(o.prompt_tokens) + double(macs.output) * double(chunks);
      row.prefill_weight_gmacs_per_s = prefill_macs / prefill_s / 1e9;
      row.prefill_fma_peak_gmacs = prefill_peak;
      row.prefill_fraction_of_fma_peak = row.prefill_weight_gmacs_per_s / prefill_peak;
    }
  }
  return r;
}

}  // namespace kvengine
