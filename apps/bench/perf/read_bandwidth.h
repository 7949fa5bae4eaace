// The machine's streaming read bandwidth, measured the way a memory-bound decode step reads:
// every thread of a pool sums its contiguous share of a buffer far larger than the last-level
// cache, as a few runs read side by side (the count that reads fastest here), with the widest
// vectors the CPU has (whatever kernel target a benchmark forces: the figure is the machine's, and
// a narrow sum is bound by its own instructions). Benchmarks report their bytes/s as a fraction of
// this figure measured in the same run (kernels_microbench's BM_ReadBandwidth, `kvengine bench
// attention`, `kvengine bench decode`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/huge_pages.h"
#include "kvengine/status.h"
#include "base/thread_pool.h"

namespace kvengine {

// Bytes a buffer (or a benchmark's cycled footprint) needs so that passes over it come from DRAM:
// kBeyondCacheFactor times the last-level cache, and at least `floor`. A cyclic scan of a buffer
// larger than the cache misses throughout under LRU; adaptive replacement (Intel's L3) keeps part
// of such a scan, at most the cache's share of the buffer: a quarter at 4x. A fixed 256 MiB was
// far beyond an EPYC CCD's 32 MiB but less than the 300 MiB L3 of a Xeon VM (2026-12-01).
inline constexpr uint64_t kBeyondCacheFactor = 4;
uint64_t BeyondLastLevelCacheBytes(uint64_t floor, uint64_t llc_bytes);
// The same for this machine's last-level cache (base/cpu_features.h).
uint64_t BeyondLastLevelCacheBytes(uint64_t floor);
inline constexpr uint64_t kReadBandwidthMinBytes = uint64_t{256} << 20;

struct ReadBandwidthOptions {
  // Buffer size: 4x the last-level cache, at least 256 MiB (BeyondLastLevelCacheBytes).
  size_t bytes = size_t(BeyondLastLevelCacheBytes(kReadBandwidthMinBytes));
  // Timed passes continue until both limits are reached (after one untimed warm-up pass).
  double min_seconds = 0.2;
  int min_passes = 3;
  // A benchmark that measures again after each of its rows (ReadBandwidthProbe) times at least
  // this long, at least one pass: the machine's bandwidth moves within a run.
  double row_min_seconds = 0.05;
};

// Runs each thread reads side by side, a cache line of each per step. One sequential stream per
// core leaves bandwidth unused where a core's throughput is bounded by the misses that one
// stream's hardware prefetcher keeps in flight: on the Ice Lake server of 2026-12-01 one stream
// read 11.6 GB/s, 4 streams 15.8, 8 streams 16.8 (2 threads: 23.2 / 29.6 / 32.4). The kernels
// measured against this figure read many streams at once too (paged KV blocks, K beside V, four
// weight-row runs), so one stream would flatter them. How many runs read fastest depends on the
// machine: on the Zen 4 VM of 2026-12-03 eight runs read 10-16% less than two to six with one
// thread (20.9 against 23.6-24.6 GB/s, means of 12 alternations) and 6-9% less with two, where on
// the Ice Lake server eight read the most. So ReadBandwidthProbe tries each count here and keeps
// the fastest for each thread count (Streams): the figure is the best a plain streaming read gets.
inline constexpr int kReadStreamCounts[] = {2, 4, 8};
inline constexpr int kMaxReadStreams = 8;
// kReadStreamCounts as text for reports: "2/4/8".
std::string ReadStreamCountsText();
inline constexpr int kReadLineWords = 8;  // 64-byte cache lines of uint64_t words.
// Bytes (and words) of one run within a block of `streams` runs: a thread's share is read block
// after block, the runs of a block side by side, 256 KiB apart. Runs a large power of two apart (a
// thread's share split into eight equal runs: 64 MiB) contend for the same DRAM banks: on the
// Zen 3 VM of 2026-12-03 eight runs 64 MiB apart read 17-21 GB/s with one thread and 32-35 with
// two, the same runs offset by 3 MiB each 27-28 and 36-38, and four runs 0.2-5.5 MiB apart (a
// decode matmul's row runs) 28 and 37.
inline constexpr int64_t kReadBlockRunBytes = int64_t{256} << 10;
inline constexpr int64_t kReadBlockRunWords = kReadBlockRunBytes / 8;

// Words of a `words`-long buffer that one StreamingReadPass with `parts` threads and `streams`
// runs reads: each thread's contiguous share, rounded down to `streams` lines (the rest is
// skipped). Requires 1 <= streams <= kMaxReadStreams.
size_t StreamingReadWords(size_t words, int parts, int streams);

// One streaming pass over `words`: pool.num_threads() contiguous parts, one per thread, each read
// in blocks of `streams` runs of kReadBlockRunWords (the last block's runs shorter, whole lines),
// a block's runs in lockstep. Returns the sum of the words read (the first
// StreamingReadWords(words.size(), threads, streams) of them) so that the reads cannot be
// optimized away. Requires 1 <= streams <= kMaxReadStreams.
uint64_t StreamingReadPass(ThreadPool& pool, std::span<const uint64_t> words, int streams);

// Allocates options.bytes in 2 MiB huge pages (base/huge_pages.h), writes every word, then
// times passes of StreamingReadPass over it with the pool's threads and the stream count
// ReadBandwidthProbe::Streams picks. Returns the mean rate over the timed passes in GB/s (1e9
// bytes per second). Errors: the allocation failed, or the buffer is too small to split over the
// pool's threads.
Result<double> MeasureReadBandwidthGBs(ThreadPool& pool, const ReadBandwidthOptions& options = {});

// The buffer of MeasureReadBandwidthGBs, allocated and written once and measured as often as
// wanted: for a benchmark that measures the bandwidth beside each of its rows, since on a shared
// machine it moves by up to 2x within a run (the Xeon VM of 2026-12-01). Move-only; one thread
// at a time.
class ReadBandwidthProbe {
 public:
  // `bytes` in huge pages, every word written (by pool's threads if given). Errors: the
  // allocation failed.
  static Result<ReadBandwidthProbe> Create(size_t bytes, ThreadPool* pool = nullptr);
  // With Streams(pool) runs per thread: one untimed pass, then timed passes until both limits
  // are reached: the mean GB/s. Errors: the buffer is too small to split over the pool's threads.
  Result<double> Measure(ThreadPool& pool, double min_seconds, int min_passes);
  // The runs per thread that Measure reads with pool's thread count. The first call for a thread
  // count times every count of kReadStreamCounts in turns, kCalibrationRounds rounds of at least
  // kCalibrationSeconds (and one pass) each after an untimed pass, and keeps the count with the
  // highest total rate; later calls return it. Errors: as Measure.
  Result<int> Streams(ThreadPool& pool);
  size_t bytes() const { return words_ * sizeof(uint64_t); }

  static constexpr int kCalibrationRounds = 3;
  static constexpr double kCalibrationSeconds = 0.03;

 private:
  // The mean GB/s of passes with `streams` runs until both limits are reached (no warm-up).
  double TimePasses(ThreadPool& pool, int streams, double min_seconds, int min_passes) const;
  std::span<const uint64_t> words() const;

  HugePageRegion region_;
  size_t words_ = 0;  // region_ holds words_ uint64_t, word i = i.
  std::vector<std::pair<int, int>> streams_;  // (threads, runs per thread) chosen by Streams.
};

}  // namespace kvengine
