// The streaming read bandwidth probe (read_bandwidth.h). Its per-thread sum is compiled once per
// Highway target and runs on the best one this CPU has: compiled for the baseline (SSE2: 16
// registers of two words, so 64 accumulator words spilled to the stack) it was bound by its own
// instructions, reading 15 GB/s with one thread on a Zen 3 VM where an AVX2 sum of the same lines
// read 21-24, and 29 GB/s with two against 31-34 (2026-12-03), which flattered every fraction of
// it that the benchmarks print.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/perf/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <chrono>
#include <iterator>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "base/huge_pages.h"
#include "hwy/highway.h"
#include "bench/perf/read_bandwidth.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The wrapping sum of kStreams runs of `run` words each (a multiple of kReadLineWords) at
// runs, runs + run, ...: one line of every run per step, one vector accumulator per run (vectors
// of at most a line, so that whole vectors cover every line).
template <int kStreams>
HWY_INLINE uint64_t SumRunsT(const uint64_t* runs, int64_t run) {
  const hn::CappedTag<uint64_t, kReadLineWords> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  using V = hn::Vec<decltype(d)>;
  V acc[kStreams];
  for (V& a : acc) a = hn::Zero(d);
  for (int64_t i = 0; i < run; i += kReadLineWords) {
    for (int s = 0; s < kStreams; ++s) {
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

// SumRunsT for `streams` runs: a constant count keeps the accumulators in registers.
template <int kStreams = 1>
HWY_INLINE uint64_t SumRunsFor(int streams, const uint64_t* runs, int64_t run) {
  if constexpr (kStreams < kMaxReadStreams) {
    if (streams != kStreams) return SumRunsFor<kStreams + 1>(streams, runs, run);
  }
  return SumRunsT<kStreams>(runs, run);
}

uint64_t SumRuns(const uint64_t* runs, int64_t run, int streams) {
  return SumRunsFor(streams, runs, run);
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

std::string ReadStreamCountsText() {
  std::string s;
  for (int n : kReadStreamCounts) s += (s.empty() ? "" : "/") + std::to_string(n);
  return s;
}

size_t StreamingReadWords(size_t words, int parts, int streams) {
  KV_CHECK(streams >= 1 && streams <= kMaxReadStreams) << streams << " read streams";
  const size_t step = size_t(streams) * kReadLineWords;
  return words / size_t(parts) / step * step * size_t(parts);
}

uint64_t StreamingReadPass(ThreadPool& pool, std::span<const uint64_t> words, int streams) {
  const int64_t parts = pool.num_threads();
  const int64_t share = int64_t(StreamingReadWords(words.size(), int(parts), streams)) / parts;
  const uint64_t* buf = words.data();
  // sums: [parts][8]; one cache line per part so that threads never write the same line.
  std::vector<uint64_t> sums(static_cast<size_t>(parts) * 8);
  pool.ParallelFor(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      // Blocks of `streams` runs of kReadBlockRunWords (the last block's runs shorter).
      const uint64_t* share_begin = buf + share * part;
      uint64_t total = 0;
      for (int64_t done = 0; done < share;) {
        const int64_t run = std::min<int64_t>(kReadBlockRunWords, (share - done) / streams);
        total += HWY_DYNAMIC_DISPATCH(SumRuns)(share_begin + done, run, streams);
        done += run * streams;
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

std::span<const uint64_t> ReadBandwidthProbe::words() const {
  return {reinterpret_cast<const uint64_t*>(region_.data()), words_};
}

double ReadBandwidthProbe::TimePasses(ThreadPool& pool, int streams, double min_seconds,
                                      int min_passes) const {
  const double bytes_per_pass =
      static_cast<double>(StreamingReadWords(words_, pool.num_threads(), streams)) *
      sizeof(uint64_t);
  volatile uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double seconds = 0;
  int passes = 0;
  while (passes < min_passes || seconds < min_seconds) {
    sink = sink + StreamingReadPass(pool, words(), streams);
    ++passes;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return bytes_per_pass * passes / seconds / 1e9;
}

Result<int> ReadBandwidthProbe::Streams(ThreadPool& pool) {
  const int threads = pool.num_threads();
  for (const auto& [t, streams] : streams_) {
    if (t == threads) return streams;
  }
  // Every count must split the buffer (the largest needs the most words per thread).
  if (StreamingReadWords(words_, threads, kMaxReadStreams) == 0) {
    return InvalidArgument("read bandwidth buffer of " + std::to_string(bytes()) +
                           " bytes is too small");
  }
  volatile uint64_t sink = StreamingReadPass(pool, words(), kReadStreamCounts[0]);  // Warm-up.
  (void)sink;
  double total[std::size(kReadStreamCounts)] = {};
  for (int round = 0; round < kCalibrationRounds; ++round) {
    for (size_t i = 0; i < std::size(kReadStreamCounts); ++i) {
      total[i] += TimePasses(pool, kReadStreamCounts[i], kCalibrationSeconds, 1);
    }
  }
  const size_t best = size_t(std::max_element(std::begin(total), std::end(total)) - total);
  streams_.emplace_back(threads, kReadStreamCounts[best]);
  return kReadStreamCounts[best];
}

Result<double> ReadBandwidthProbe::Measure(ThreadPool& pool, double min_seconds, int min_passes) {
  KV_ASSIGN_OR_RETURN(const int streams, Streams(pool));
  volatile uint64_t sink = StreamingReadPass(pool, words(), streams);  // Warm-up: TLB, workers.
  (void)sink;
  return TimePasses(pool, streams, min_seconds, min_passes);
}

Result<double> MeasureReadBandwidthGBs(ThreadPool& pool, const ReadBandwidthOptions& options) {
  KV_ASSIGN_OR_RETURN(ReadBandwidthProbe probe, ReadBandwidthProbe::Create(options.bytes, &pool));
  return probe.Measure(pool, options.min_seconds, options.min_passes);
}

}  // namespace kvengine
#endif  // HWY_ONCE
