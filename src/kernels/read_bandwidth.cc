// The streaming read bandwidth probe (read_bandwidth.h). Its per-thread sum is compiled once per
// Highway target and runs on the best one this CPU has: compiled for the baseline (SSE2: 16
// registers of two words, so 64 accumulator words spilled to the stack) it was bound by its own
// instructions, reading 15 GB/s with one thread on a Zen 3 VM where an AVX2 sum of the same lines
// read 21-24, and 29 GB/s with two against 31-34 (2026-12-03), which flattered every fraction of
// it that the benchmarks print.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <chrono>
#include <vector>

#include "base/cpu_features.h"
#include "base/huge_pages.h"
#include "hwy/highway.h"
#include "kernels/read_bandwidth.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The wrapping sum of kReadStreams runs of `run` words each (a multiple of kReadLineWords) at
// runs, runs + run, ...: one line of every run per step, one vector accumulator per run (vectors
// of at most a line, so that whole vectors cover every line).
uint64_t SumRuns(const uint64_t* runs, int64_t run) {
  const hn::CappedTag<uint64_t, kReadLineWords> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  using V = hn::Vec<decltype(d)>;
  V acc[kReadStreams];
  for (V& a : acc) a = hn::Zero(d);
  for (int64_t i = 0; i < run; i += kReadLineWords) {
    for (int s = 0; s < kReadStreams; ++s) {
      const uint64_t* line = runs + s * run + i;
      for (int64_t w = 0; w < kReadLineWords; w += lanes) {
        acc[s] = hn::Add(acc[s], hn::LoadU(d, line + w));
      }
    }
  }
  V total = hn::Zero(d);
  for (const V& a : acc) total = hn::Add(total, a);
  return hn::GetLane(hn::SumOfLanes(d, total));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(SumRuns);

uint64_t BeyondLastLevelCacheBytes(uint64_t floor, uint64_t llc_bytes) {
  // Rounded up to whole 2 MiB pages, the unit of the buffers' huge-page regions.
  constexpr uint64_t kPage = uint64_t{2} << 20;
  const uint64_t bytes = std::max(floor, llc_bytes * kBeyondCacheFactor);
  return (bytes + kPage - 1) / kPage * kPage;
}

uint64_t BeyondLastLevelCacheBytes(uint64_t floor) {
  return BeyondLastLevelCacheBytes(floor, uint64_t(LastLevelCacheBytes()));
}

size_t StreamingReadWords(size_t words, int parts) {
  const size_t step = size_t(kReadStreams) * kReadLineWords;
  return words / size_t(parts) / step * step * size_t(parts);
}

uint64_t StreamingReadPass(ThreadPool& pool, std::span<const uint64_t> words) {
  const int64_t parts = pool.num_threads();
  const int64_t share = int64_t(StreamingReadWords(words.size(), int(parts))) / parts;
  const uint64_t* buf = words.data();
  // sums: [parts][8]; one cache line per part so that threads never write the same line.
  std::vector<uint64_t> sums(static_cast<size_t>(parts) * 8);
  pool.ParallelFor(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      // Blocks of kReadStreams runs of kReadBlockRunWords (the last block's runs shorter).
      const uint64_t* share_begin = buf + share * part;
      uint64_t total = 0;
      for (int64_t done = 0; done < share;) {
        const int64_t run = std::min<int64_t>(kReadBlockRunWords, (share - done) / kReadStreams);
        total += HWY_DYNAMIC_DISPATCH(SumRuns)(share_begin + done, run);
        done += run * kReadStreams;
      }
      sums[static_cast<size_t>(part) * 8] = total;
    }
  });
  uint64_t total = 0;
  for (int64_t part = 0; part < parts; ++part) total += sums[static_cast<size_t>(part) * 8];
  return total;
}

Result<ReadBandwidthProbe> ReadBandwidthProbe::Create(size_t bytes, ThreadPool* pool) {
  ReadBandwidthProbe probe;
  probe.words_ = bytes / sizeof(uint64_t);
  KV_ASSIGN_OR_RETURN(probe.region_, HugePageRegion::Allocate(std::max<size_t>(probe.words_, 1) *
                                                              sizeof(uint64_t)));
  // words: [words_], every word written so that every page is committed before timing.
  uint64_t* words = reinterpret_cast<uint64_t*>(probe.region_.data());
  const auto fill = [words](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) words[i] = static_cast<uint64_t>(i);
  };
  if (pool != nullptr) {
    pool->ParallelFor(static_cast<int64_t>(probe.words_), fill);
  } else {
    fill(0, static_cast<int64_t>(probe.words_));
  }
  return probe;
}

Result<double> ReadBandwidthProbe::Measure(ThreadPool& pool, double min_seconds,
                                           int min_passes) const {
  const size_t words_per_pass = StreamingReadWords(words_, pool.num_threads());
  if (words_per_pass == 0) {
    return InvalidArgument("read bandwidth buffer of " + std::to_string(bytes()) +
                           " bytes is too small");
  }
  const std::span<const uint64_t> span(reinterpret_cast<const uint64_t*>(region_.data()), words_);
  volatile uint64_t sink = StreamingReadPass(pool, span);  // Warm-up: TLB, workers awake.
  const double bytes_per_pass = static_cast<double>(words_per_pass) * sizeof(uint64_t);
  const auto t0 = std::chrono::steady_clock::now();
  double seconds = 0;
  int passes = 0;
  while (passes < min_passes || seconds < min_seconds) {
    sink = sink + StreamingReadPass(pool, span);
    ++passes;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  (void)sink;
  return bytes_per_pass * passes / seconds / 1e9;
}

Result<double> MeasureReadBandwidthGBs(ThreadPool& pool, const ReadBandwidthOptions& options) {
  KV_ASSIGN_OR_RETURN(ReadBandwidthProbe probe, ReadBandwidthProbe::Create(options.bytes, &pool));
  return probe.Measure(pool, options.min_seconds, options.min_passes);
}

}  // namespace kvengine
#endif  // HWY_ONCE
