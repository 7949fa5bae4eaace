// Micro-benchmarks of the CPU kernels on the active (best) target, with the scalar reference
// beside it where that is useful, and the machine's streaming read bandwidth measured in the same
// run so that MatMul's weight bytes/s can be read as a fraction of it.
//
// MatMul arguments: {weight type index in kTypes, n_tokens, threads}; shape 2048 x 2048.
// bytes/s counts the weight bytes (the memory a decode step streams); items/s counts tokens.
#include <benchmark/benchmark.h>

#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "gguf/gguf_layout.h"
#include "kernels/kernel_target.h"
#include "kernels/matmul.h"
#include "bench/perf/read_bandwidth.h"
#include "kernels/vector_ops.h"
#include "quant/weight_blocks.h"
#include "quant/half.h"

namespace kvengine {
namespace {

constexpr GgmlType kTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                               GgmlType::kQ4_K};
constexpr int64_t kRows = 2048;
constexpr int64_t kCols = 2048;
// Weights are cycled through copies totalling 4x the last-level cache, at least 192 MiB
// (BeyondLastLevelCacheBytes: an EPYC CCD has 32 MiB of L3, the Intel VMs of BENCHMARKS.md up to
// 300 MiB), so every call streams them from memory as a decode step does.
size_t WeightFootprint() {
  static const size_t bytes = size_t(BeyondLastLevelCacheBytes(size_t{192} << 20));
  return bytes;
}

// n F16 values drawn from N(0, 0.05), as bytes.
std::vector<uint8_t> RandomF16Bytes(int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (size_t i = 0; i < bytes.size() / 2; ++i) {
    const uint16_t h = F32ToF16(normal(rng));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<uint8_t> RandomWeightBytes(GgmlType type, size_t row_bytes, std::mt19937& rng) {
  std::vector<uint8_t> bytes(row_bytes * kRows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  // Keep values finite: rewrite every float / half / scale with a normal value.
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (int64_t r = 0; r < kRows; ++r) {
    uint8_t* row = bytes.data() + r * row_bytes;
    for (int64_t c = 0; c < kCols; ++c) {
      const float v = normal(rng);
      if (type == GgmlType::kF32) std::memcpy(row + 4 * c, &v, 4);
      if (type == GgmlType::kF16) {
        const uint16_t h = F32ToF16(v);
        std::memcpy(row + 2 * c, &h, 2);
      }
      if (type == GgmlType::kBF16) {
        const uint16_t h = F32ToBf16(v);
        std::memcpy(row + 2 * c, &h, 2);
      }
      if (type == GgmlType::kQ8_0 && c % 32 == 0) {
        const uint16_t d = F32ToF16(0.001f);
        std::memcpy(row + (c / 32) * 34, &d, 2);
      }
      if (type == GgmlType::kQ4_K && c % 256 == 0) {  // d and dmin of the super-block.
        const uint16_t d = F32ToF16(0.001f);
        std::memcpy(row + (c / 256) * 144, &d, 2);
        std::memcpy(row + (c / 256) * 144 + 2, &d, 2);
      }
    }
  }
  return bytes;
}

// Copies of one matrix's bytes laid end to end in a huge-page region (as the model keeps its
// weights), WeightFootprint() bytes in all, so every call streams its weights from memory.
class WeightCopies {
 public:
  explicit WeightCopies(const std::vector<uint8_t>& bytes)
      : size_(bytes.size()), count_((WeightFootprint() + size_ - 1) / size_) {
    Result<HugePageRegion> region = HugePageRegion::Allocate(size_ * count_);
    KV_CHECK(region.ok()) << region.status().ToString();
    region_ = std::move(region).value();
    for (size_t i = 0; i < count_; ++i)
      std::memcpy(region_.data() + i * size_, bytes.data(), size_);
  }
  const uint8_t* Next() { return region_.data() + (next_++ % count_) * size_; }

 private:
  size_t size_;
  size_t count_;
  size_t next_ = 0;
  HugePageRegion region_;
};

void BM_MatMul(benchmark::State& state) {
  const GgmlType type = kTypes[state.range(0)];
  const int64_t n_tokens = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  std::mt19937 rng(1);
  const size_t row_bytes = static_cast<size_t>(*GgmlRowBytes(type, kCols));
  WeightCopies copies(RandomWeightBytes(type, row_bytes, rng));
  std::vector<float> x(static_cast<size_t>(n_tokens * kCols));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * kRows));
  for (auto _ : state) {
    const WeightView w{type, kRows, kCols, copies.Next(), row_bytes};
    MatMul(w, x.data(), n_tokens, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(row_bytes) * kRows);
  state.SetItemsProcessed(state.iterations() * n_tokens);
  state.counters["GFLOPS"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * kRows * kCols * n_tokens * 1e-9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(GgmlTypeName(type)) + " " + ActiveKernelTarget());
}
BENCHMARK(BM_MatMul)
    ->ArgNames({"type", "tokens", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 8}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Decode (one token) over F16 weights that stay in L2 (128 x 2048, 512 KiB, one thread): the
// kernel's arithmetic ceiling, which a decode step needs above the memory's read bandwidth.
void BM_MatMulDecodeInCache(benchmark::State& state) {
  constexpr int64_t kCacheRows = 128;
  ThreadPool pool(1);
  std::mt19937 rng(1);
  const size_t row_bytes = static_cast<size_t>(kCols) * 2;
  const std::vector<uint8_t> bytes = RandomF16Bytes(kCols * kCacheRows, rng);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(static_cast<size_t>(kCols));
  for (float& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(kCacheRows));
  for (auto _ : state) {
    const WeightView w{GgmlType::kF16, kCacheRows, kCols, bytes.data(), row_bytes};
    MatMul(w, x.data(), 1, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_MatMulDecodeInCache)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Decode (one token, one thread) over block-quantized weights that stay in L2 (128 or 256 rows x
// 2048): the per-row kernel's arithmetic cost without the memory's noise (arguments: the type's
// index in kQuantTypes, rows; bytes/s of weights). The call's fixed cost (quantizing the
// activations) weighs more at 128 rows. Random codes, every f16 field 0.001.
constexpr GgmlType kQuantTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1,
                                    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ4_K,
                                    GgmlType::kQ5_K, GgmlType::kQ6_K};
void BM_QuantDecodeInCache(benchmark::State& state) {
  const GgmlType type = kQuantTypes[state.range(0)];
  const int64_t rows = state.range(1);
  ThreadPool pool(1);
  std::mt19937 rng(1);
  const size_t row_bytes = static_cast<size_t>(*GgmlRowBytes(type, kCols));
  const size_t block_bytes = GetGgmlTypeTraits(type).bytes_per_block;
  std::vector<uint8_t> bytes(row_bytes * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  const uint16_t scale = F32ToF16(0.001f);
  for (size_t block = 0; block < bytes.size() / block_bytes; ++block) {
    for (size_t offset : BlockHalfFieldOffsets(type)) {
      std::memcpy(bytes.data() + block * block_bytes + offset, &scale, 2);
    }
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kCols));
  for (float& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(rows));
  for (auto _ : state) {
    const WeightView w{type, rows, kCols, bytes.data(), row_bytes};
    MatMul(w, x.data(), 1, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
  state.SetLabel(std::string(GgmlTypeName(type)) + " " + ActiveKernelTarget());
}
BENCHMARK(BM_QuantDecodeInCache)
    ->ArgNames({"type", "rows"})
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kQuantTypes) - 1, 1), {128, 256}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// F16 MatMul at the shapes of a serving step (arguments: n_tokens, cols, threads, blocks; 2048
// rows): one decode token, small batches (4 and 6 tokens: the most the decode streams take on
// AVX-512), a batch of 16, a mixed step of ~80 rows and a prefill chunk of 512, over the
// attention/up-projection width (2048) and the down projection's (5632), weights streamed from
// memory, in ggml rows (blocks 0) or in the column blocks a model loads them in (blocks 1:
// PreferredColumnBlock, none at 2048 columns). Counts GFLOPS.
void BM_MatMulShape(benchmark::State& state) {
  const int64_t n_tokens = state.range(0);
  const int64_t cols = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  const int64_t col_block = state.range(3) != 0 ? PreferredColumnBlock(GgmlType::kF16, cols) : 0;
  std::mt19937 rng(1);
  const size_t row_bytes = static_cast<size_t>(cols) * 2;
  std::vector<uint8_t> bytes = RandomF16Bytes(cols * kRows, rng);
  if (col_block != 0) {
    std::vector<uint8_t> rows = bytes;
    PackColumnBlocks(rows.data(), kRows, cols, 2, col_block, bytes.data());
  }
  std::normal_distribution<float> normal(0.0f, 0.05f);
  WeightCopies copies(bytes);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
  for (float& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * kRows));
  for (auto _ : state) {
    const WeightView w{GgmlType::kF16, kRows, cols, copies.Next(), row_bytes, col_block};
    MatMul(w, x.data(), n_tokens, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * kRows * cols * n_tokens * 1e-9,
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatMulShape)
    ->ArgNames({"tokens", "cols", "threads", "blocks"})
    ->ArgsProduct({{1, 4, 6, 16, 80, 512}, {2048, 5632}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Cost of one ParallelFor with an empty body: the per-call overhead a decode step pays per matmul
// (argument: threads).
void BM_ParallelForOverhead(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::vector<int64_t> sink(64);
  for (auto _ : state) {
    pool.ParallelFor(64, [&](int64_t begin, int64_t end) { sink[begin] = end; });
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ParallelForOverhead)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

// Streaming read bandwidth over 4x the last-level cache (at least 256 MiB) in 2 MiB pages
// (StreamingReadPass, read_bandwidth.h: an integer sum over a few runs per thread, which
// vectorizes), split over the pool's threads as MatMul splits its rows: the ceiling for a
// memory-bound decode matmul (arguments: threads, runs per thread; `kvengine bench
// attention|decode` measure the same loop with the fastest count of kReadStreamCounts). Compare
// MatMul's bytes/s with the fastest row of this figure from the same run.
void BM_ReadBandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const int streams = static_cast<int>(state.range(1));
  const size_t words = BeyondLastLevelCacheBytes(kReadBandwidthMinBytes) / sizeof(uint64_t);
  Result<HugePageRegion> region = HugePageRegion::Allocate(words * sizeof(uint64_t));
  if (!region.ok()) {
    state.SkipWithError(region.status().message().c_str());
    return;
  }
  uint64_t* buf = reinterpret_cast<uint64_t*>(region->data());
  for (size_t i = 0; i < words; ++i) buf[i] = static_cast<uint64_t>(i);
  for (auto _ : state) {
    uint64_t sum = StreamingReadPass(pool, std::span<const uint64_t>(buf, words), streams);
    benchmark::DoNotOptimize(sum);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(
      state.iterations() *
      static_cast<int64_t>(StreamingReadWords(words, pool.num_threads(), streams) *
                           sizeof(uint64_t)));
}
BENCHMARK(BM_ReadBandwidth)
    ->ArgNames({"threads", "streams"})
    ->ArgsProduct({{1, 2}, {std::begin(kReadStreamCounts), std::end(kReadStreamCounts)}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Vector kernels at n = 4096 (hidden size) and 32000 (vocabulary): argument {n, ref?}.
template <void (*kRun)(std::vector<float>&, std::vector<float>&, const std::vector<float>&)>
void BM_Vector(benchmark::State& state) {
  const bool ref = state.range(1) != 0;
  const std::string previous = ActiveKernelTarget();
  if (ref) (void)ForceKernelTarget("ref");
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(state.range(0)));
  std::vector<float> w(x.size());
  std::vector<float> out(x.size());
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = normal(rng);
  for (auto _ : state) {
    kRun(x, out, w);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel(ActiveKernelTarget());
  (void)ForceKernelTarget(previous);
}

void RunRmsNorm(std::vector<float>& x, std::vector<float>& out, const std::vector<float>& w) {
  RmsNorm(x.data(), w.data(), static_cast<int64_t>(x.size()), 1e-5f, out.data());
}
void RunSoftmax(std::vector<float>& x, std::vector<float>& out, const std::vector<float>&) {
  out = x;
  Softmax(out.data(), static_cast<int64_t>(out.size()));
}
void RunSwiGlu(std::vector<float>& x, std::vector<float>& out, const std::vector<float>& w) {
  SwiGlu(x.data(), w.data(), static_cast<int64_t>(x.size()), out.data());
}

BENCHMARK(BM_Vector<RunRmsNorm>)
    ->Name("BM_RmsNorm")
    ->ArgNames({"n", "ref"})
    ->ArgsProduct({{4096}, {0, 1}});
BENCHMARK(BM_Vector<RunSoftmax>)
    ->Name("BM_Softmax")
    ->ArgNames({"n", "ref"})
    ->ArgsProduct({{4096, 32000}, {0, 1}});
BENCHMARK(BM_Vector<RunSwiGlu>)
    ->Name("BM_SwiGlu")
    ->ArgNames({"n", "ref"})
    ->ArgsProduct({{11008}, {0, 1}});

}  // namespace
}  // namespace kvengine
