// Decode attention throughput: one query (all heads) against a long context, the shape of one
// layer of a Llama-3-8B-like model (32 query heads, 8 KV heads, head_dim 128), 1 or 2 threads,
// paged (block 16, shuffled blocks) vs contiguous (one block), pool memory on 2 MiB pages
// (mmap + MADV_HUGEPAGE) or 4 KiB pages. Reports KV bytes read per second (bytes_per_second)
// and calls per second (tokens/s of one layer).
//
//   attention_bench --benchmark_filter='f16' --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_test_util.h"
#include "base/check.h"
#include "base/thread_pool.h"
#include "bench/perf/read_bandwidth.h"

namespace kvengine {
namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128;
constexpr int64_t kContext = 32768;

// Anonymous memory rounded to 2 MiB; huge: MADV_HUGEPAGE, else MADV_NOHUGEPAGE (4 KiB pages).
struct Mapping {
  void* p = nullptr;
  size_t bytes = 0;
  Mapping(size_t n, bool huge) : bytes((n + (2u << 20) - 1) / (2u << 20) * (2u << 20)) {
    p = mmap(nullptr, bytes + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    KV_CHECK(p != MAP_FAILED);
    // 2 MiB-align the start (the slack stays mapped; fine for a benchmark).
    const uintptr_t a =
        (reinterpret_cast<uintptr_t>(p) + (2u << 20) - 1) & ~uintptr_t((2u << 20) - 1);
    base = reinterpret_cast<uint8_t*>(a);
    madvise(base, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  ~Mapping() { munmap(p, bytes + (2u << 20)); }
  uint8_t* base = nullptr;
};

struct BenchKv {
  std::unique_ptr<Mapping> mem;
  std::vector<int32_t> table;
  KvLayerView view;
};

// Built once per (dtype, contiguous, huge) and kept for the process.
const BenchKv& GetKv(KvDtype dtype, bool contiguous, bool huge) {
  static std::map<std::tuple<KvDtype, bool, bool>, std::unique_ptr<BenchKv>> cache;
  auto& slot = cache[{dtype, contiguous, huge}];
  if (slot == nullptr) {
    attention_test::KvShape s;
    s.k_dtype = s.v_dtype = dtype;
    s.num_kv_heads = kKvHeads;
    s.head_dim_k = s.head_dim_v = kHeadDim;
    s.block_size = contiguous ? int(kContext) : 16;
    slot = std::make_unique<BenchKv>();
    const size_t bytes = size_t(attention_test::BlocksFor(s, kContext)) *
                         attention_test::LayoutOf(s).bytes_per_block;
    slot->mem = std::make_unique<Mapping>(bytes, huge);
    slot->view =
        attention_test::FillKv(s, kContext, 1, slot->mem->base, &slot->table, nullptr, nullptr);
  }
  return *slot;
}

// Args: dtype index (kAllKvDtypes), threads, contiguous (0/1), huge pages (0/1), context, kernel
// (index in AvailableAttentionKernels(): 0 = the best, as PagedAttentionBatch).
void BM_DecodeAttention(benchmark::State& state) {
  static const std::vector<AttentionKernels> kernels = AvailableAttentionKernels();
  if (size_t(state.range(5)) >= kernels.size()) {
    state.SkipWithError("no such kernel on this CPU");
    return;
  }
  const AttentionKernels& kernel = kernels[size_t(state.range(5))];
  const KvDtype dtype = kAllKvDtypes[state.range(0)];
  const int threads = int(state.range(1));
  const BenchKv& kv = GetKv(dtype, state.range(2) != 0, state.range(3) != 0);
  ThreadPool pool(threads);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(size_t(kHeads) * kHeadDim), out(q.size());
  for (float& x : q) x = nd(rng);
  const int64_t context = state.range(4);  // Positions visible to the query.
  const AttentionQuery query{kv.table, q.data(), context - 1, out.data()};
  const float scale = 1.0f / std::sqrt(float(kHeadDim));
  for (auto _ : state) {
    PagedAttentionBatchWith(kernel, kv.view, std::span<const AttentionQuery>(&query, 1), kHeads,
                            scale, &pool);
    benchmark::DoNotOptimize(out.data());
  }
  const KvLayerView& v = kv.view;
  const double row_bytes =
      double(v.k_row_bytes + v.k_scale_bytes + v.v_row_bytes + v.v_scale_bytes);
  state.SetBytesProcessed(
      int64_t(double(state.iterations()) * row_bytes * kKvHeads * double(context)));
  state.SetLabel(std::string(KvDtypeName(dtype)) + (state.range(2) ? " contiguous" : " paged") +
                 (state.range(3) ? " 2M-pages" : " 4K-pages") + " t=" + std::to_string(threads) +
                 " ctx=" + std::to_string(context) + " " + kernel.target_name);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t dtype = 0; dtype < int64_t(std::size(kAllKvDtypes)); ++dtype) {
    for (int64_t threads : {1, 2}) {
      for (int64_t contiguous : {0, 1}) {
        for (int64_t huge : {1, 0}) b->Args({dtype, threads, contiguous, huge, kContext, 0});
      }
    }
    // In-cache (L2/L3) contexts: the kernel's compute ceiling.
    b->Args({dtype, 1, 1, 1, 512, 0});
    // The second- and third-best kernels (AVX3 and AVX2 where the best is AVX3_VNNI), 1 thread,
    // to compare in-process.
    for (int64_t kernel : {1, 2}) {
      for (int64_t contiguous : {0, 1}) b->Args({dtype, 1, contiguous, 1, kContext, kernel});
    }
  }
}
BENCHMARK(BM_DecodeAttention)->Apply(Args)->UseRealTime()->Unit(benchmark::kMillisecond);

// The yardstick: StreamingReadPass (bench/perf/read_bandwidth.h, what `kvengine bench attention`
// measures with the fastest count of kReadStreamCounts) over 128 MiB (the f16 KV of one layer) on
// 2 MiB pages, split over the threads (arguments: threads, runs per thread).
void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = int(state.range(0));
  const int streams = int(state.range(1));
  const size_t bytes = size_t(128) << 20;
  static Mapping* mem = [&] {
    auto* m = new Mapping(bytes, true);
    std::memset(m->base, 1, bytes);
    return m;
  }();
  ThreadPool pool(threads);
  const std::span<const uint64_t> words(reinterpret_cast<const uint64_t*>(mem->base), bytes / 8);
  for (auto _ : state) benchmark::DoNotOptimize(StreamingReadPass(pool, words, streams));
  state.SetBytesProcessed(
      int64_t(state.iterations() * StreamingReadWords(words.size(), threads, streams) * 8));
}
BENCHMARK(BM_ReadBandwidth)
    ->ArgNames({"threads", "streams"})
    ->ArgsProduct({{1, 2}, {std::begin(kReadStreamCounts), std::end(kReadStreamCounts)}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvengine
