// MeasureFmaPeakGmacs and MeasureF16FmaPeakGmacs: a finite, positive rate, plausible for a CPU
// (between 0.1 and 10,000 G multiply-adds per second per thread). Not a benchmark: the figures
// are printed, not judged (so neither is which of the two is faster).
#include "bench/perf/fma_peak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

namespace kvengine {
namespace {

TEST(FmaPeakTest, MeasuresAPlausibleRateForEachThreadCount) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const double gmacs = MeasureFmaPeakGmacs(pool, {.min_seconds = 0, .min_rounds = 1});
    std::cout << threads << " thread(s): " << gmacs << " G f32 multiply-adds/s\n";
    EXPECT_TRUE(std::isfinite(gmacs));
    EXPECT_GT(gmacs / threads, 0.1);
    EXPECT_LT(gmacs / threads, 1e4);
  }
}

TEST(FmaPeakTest, F16FedChainsGiveAPlausibleRate) {
  ThreadPool pool(1);
  const double f16 = MeasureF16FmaPeakGmacs(pool, {.min_seconds = 0, .min_rounds = 1});
  const double f32 = MeasureFmaPeakGmacs(pool, {.min_seconds = 0, .min_rounds = 1});
  std::cout << "1 thread: " << f16 << " G multiply-adds/s fed by f16 conversions, " << f32
            << " on registers\n";
  EXPECT_TRUE(std::isfinite(f16));
  EXPECT_GT(f16, 0.1);
  EXPECT_LT(f16, 1e4);
}

}  // namespace
}  // namespace kvengine
