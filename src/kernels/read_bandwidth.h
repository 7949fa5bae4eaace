// The machine's streaming read bandwidth, measured the way a memory-bound decode step reads:
// every thread of a pool sums its contiguous share of a buffer far larger than the last-level
// cache. Benchmarks report their bytes/s as a fraction of this figure measured in the same run
// (kernels_bench's BM_ReadBandwidth, `kvengine bench attention`, `kvengine bench decode`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"

namespace kvengine {

struct ReadBandwidthOptions {
  // Buffer size. An EPYC CCD has 32 MiB of L3; 256 MiB makes every pass come from DRAM.
  size_t bytes = size_t{256} << 20;
  // Timed passes continue until both limits are reached (after one untimed warm-up pass).
  double min_seconds = 0.2;
  int min_passes = 3;
};

// One streaming pass over `words`: pool.num_threads() contiguous parts, one per thread, each
// summed with four independent integer accumulators (the compiler vectorizes it). Returns the
// sum of all words so that the reads cannot be optimized away. words.size() must be a multiple
// of 4 * pool.num_threads() for every word to be read (the tail beyond that is skipped).
uint64_t StreamingReadPass(ThreadPool& pool, std::span<const uint64_t> words);

// Allocates options.bytes in 2 MiB huge pages (base/huge_pages.h), writes every word, then
// times passes of StreamingReadPass over it with the pool's threads. Returns the mean rate over
// the timed passes in GB/s (1e9 bytes per second). Errors: the allocation failed.
Result<double> MeasureReadBandwidthGBs(ThreadPool& pool, const ReadBandwidthOptions& options = {});

}  // namespace kvengine
