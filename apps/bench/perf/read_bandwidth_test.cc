// StreamingReadPass reads exactly the words StreamingReadWords promises, whatever the thread
// count, runs per thread and however many blocks of runs a thread's share takes (its sum is their
// sum); the probe picks its runs per thread from kReadStreamCounts once per thread count; and
// MeasureReadBandwidthGBs gives a finite, positive rate or a clear error for a buffer too small to
// split. Not a benchmark: the rate is printed, not judged.
#include "bench/perf/read_bandwidth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <numeric>
#include <random>
#include <vector>

#include "base/cpu_features.h"

namespace kvengine {
namespace {

TEST(ReadBandwidthTest, StreamingReadWordsRoundsEachThreadsShareDownToWholeStreamLines) {
  for (const int streams : {1, 2, 3, 4, 8}) {
    SCOPED_TRACE(streams);
    const size_t step = size_t(streams) * kReadLineWords;
    EXPECT_EQ(StreamingReadWords(step, 1, streams), step);
    EXPECT_EQ(StreamingReadWords(step - 1, 1, streams), 0u);
    EXPECT_EQ(StreamingReadWords(2 * step + 5, 2, streams), 2 * step);
    EXPECT_EQ(StreamingReadWords(3 * step, 2, streams), 2 * step);  // 1.5 steps each: one.
    EXPECT_EQ(StreamingReadWords(10 * step, 3, streams), 9 * step);
  }
}

TEST(ReadBandwidthTest, PassSumsExactlyTheWordsItReads) {
  std::mt19937_64 rng(7);
  // The last size spans several blocks of runs per thread, the last block shorter.
  const size_t blocks = 5 * size_t(kMaxReadStreams) * size_t(kReadBlockRunWords) + 12345;
  for (const size_t n : {size_t{64}, size_t{1000}, size_t{4096}, size_t{12345}, blocks}) {
    std::vector<uint64_t> words(n);
    for (uint64_t& w : words) w = rng();
    for (const int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (const int streams : {1, 2, 3, 4, 8}) {
        const size_t read = StreamingReadWords(n, threads, streams);
        const uint64_t want =
            std::accumulate(words.begin(), words.begin() + long(read), uint64_t{0});
        EXPECT_EQ(StreamingReadPass(pool, words, streams), want)
            << n << " words, " << threads << " threads, " << streams << " streams";
      }
    }
  }
}

TEST(ReadBandwidthTest, MeasuresAPlausibleRateOrRejectsATinyBuffer) {
  ThreadPool pool(2);
  const Result<double> gbs =
      MeasureReadBandwidthGBs(pool, {.bytes = size_t{8} << 20, .min_seconds = 0, .min_passes = 1});
  ASSERT_TRUE(gbs.ok()) << gbs.status().message();
  std::cout << "2 threads over 8 MiB: " << *gbs << " GB/s\n";
  EXPECT_TRUE(std::isfinite(*gbs));
  EXPECT_GT(*gbs, 0.0);
  const Result<double> tiny = MeasureReadBandwidthGBs(pool, {.bytes = 512});  // 32 words each.
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("too small"), std::string::npos);
}

TEST(ReadBandwidthTest, ProbeMeasuresRepeatedlyOrRejectsATinyBuffer) {
  ThreadPool pool(2);
  Result<ReadBandwidthProbe> probe = ReadBandwidthProbe::Create(size_t{8} << 20, &pool);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_EQ(probe->bytes(), size_t{8} << 20);
  for (int i = 0; i < 2; ++i) {
    const Result<double> gbs = probe->Measure(pool, 0, 1);
    ASSERT_TRUE(gbs.ok()) << gbs.status().message();
    EXPECT_TRUE(std::isfinite(*gbs));
    EXPECT_GT(*gbs, 0.0);
  }
  ThreadPool one(1);
  EXPECT_TRUE(probe->Measure(one, 0, 1).ok());
  // One of the candidate counts per thread count, chosen once: later calls return the same.
  for (ThreadPool* p : {&pool, &one}) {
    const Result<int> streams = probe->Streams(*p);
    ASSERT_TRUE(streams.ok()) << streams.status().message();
    std::cout << p->num_threads() << " thread(s): " << *streams << " runs per thread\n";
    EXPECT_NE(std::find(std::begin(kReadStreamCounts), std::end(kReadStreamCounts), *streams),
              std::end(kReadStreamCounts));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(*probe->Streams(*p), *streams);
  }
  Result<ReadBandwidthProbe> tiny = ReadBandwidthProbe::Create(512);  // 32 words per thread.
  ASSERT_TRUE(tiny.ok());
  const Result<double> rejected = tiny->Measure(pool, 0, 1);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("too small"), std::string::npos);
  EXPECT_FALSE(tiny->Streams(pool).ok());
}

TEST(ReadBandwidthTest, BuffersGoBeyondTheLastLevelCache) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  // A small cache: the floor.
  EXPECT_EQ(BeyondLastLevelCacheBytes(256 * kMiB, 32 * kMiB), 256 * kMiB);
  // Unknown (0): the floor.
  EXPECT_EQ(BeyondLastLevelCacheBytes(192 * kMiB, 0), 192 * kMiB);
  // The 300 MiB L3 of a Xeon VM: 4x it, which a fixed 256 MiB was not.
  EXPECT_EQ(BeyondLastLevelCacheBytes(256 * kMiB, 300 * kMiB), 1200 * kMiB);
  // Whole 2 MiB pages.
  EXPECT_EQ(BeyondLastLevelCacheBytes(kMiB, 3 * kMiB), 12 * kMiB);
  EXPECT_EQ(BeyondLastLevelCacheBytes(3 * kMiB, 0), 4 * kMiB);
  // This machine's: beyond its cache and the floor, and the default options use it.
  const uint64_t here = BeyondLastLevelCacheBytes(kReadBandwidthMinBytes);
  EXPECT_GE(here, kReadBandwidthMinBytes);
  EXPECT_GE(here, uint64_t(LastLevelCacheBytes()) * kBeyondCacheFactor);
  EXPECT_EQ(ReadBandwidthOptions{}.bytes, here);
}

}  // namespace
}  // namespace kvengine
