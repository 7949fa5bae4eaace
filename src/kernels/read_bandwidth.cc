#include "kernels/read_bandwidth.h"

#include <chrono>
#include <vector>

#include "base/huge_pages.h"

namespace kvengine {

uint64_t StreamingReadPass(ThreadPool& pool, std::span<const uint64_t> words) {
  const int64_t parts = pool.num_threads();
  // Each part's share, rounded down to the 4-word unroll.
  const int64_t share = static_cast<int64_t>(words.size()) / parts / 4 * 4;
  const uint64_t* buf = words.data();
  // sums: [parts][8]; one cache line per part so that threads never write the same line.
  std::vector<uint64_t> sums(static_cast<size_t>(parts) * 8);
  pool.ParallelFor(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const int64_t lo = share * part;
      const int64_t hi = lo + share;
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t i = lo; i < hi; i += 4) {
        s0 += buf[i];
        s1 += buf[i + 1];
        s2 += buf[i + 2];
        s3 += buf[i + 3];
      }
      sums[static_cast<size_t>(part) * 8] = s0 + s1 + s2 + s3;
    }
  });
  uint64_t total = 0;
  for (int64_t part = 0; part < parts; ++part) total += sums[static_cast<size_t>(part) * 8];
  return total;
}

Result<double> MeasureReadBandwidthGBs(ThreadPool& pool, const ReadBandwidthOptions& options) {
  const size_t n_words = options.bytes / sizeof(uint64_t);
  if (n_words < 4 * static_cast<size_t>(pool.num_threads())) {
    return InvalidArgument("read bandwidth buffer of " + std::to_string(options.bytes) +
                           " bytes is too small");
  }
  KV_ASSIGN_OR_RETURN(HugePageRegion region, HugePageRegion::Allocate(n_words * sizeof(uint64_t)));
  // words: [n_words], every word written so that every page is committed before timing.
  uint64_t* words = reinterpret_cast<uint64_t*>(region.data());
  pool.ParallelFor(static_cast<int64_t>(n_words), [words](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) words[i] = static_cast<uint64_t>(i);
  });
  const std::span<const uint64_t> span(words, n_words);
  volatile uint64_t sink = StreamingReadPass(pool, span);  // Warm-up: TLB, workers awake.
  const int64_t parts = pool.num_threads();
  const double bytes_per_pass =
      static_cast<double>(static_cast<int64_t>(n_words) / parts / 4 * 4 * parts) * 8.0;
  const auto t0 = std::chrono::steady_clock::now();
  double seconds = 0;
  int passes = 0;
  while (passes < options.min_passes || seconds < options.min_seconds) {
    sink = sink + StreamingReadPass(pool, span);
    ++passes;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  (void)sink;
  return bytes_per_pass * passes / seconds / 1e9;
}

}  // namespace kvengine
