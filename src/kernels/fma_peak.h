// The machine's peak rate of f32 multiply-adds, measured: every thread of a pool runs independent
// chains of SIMD fused multiply-adds on registers (the best Highway target), so neither memory
// nor latency limits them. Benchmarks use it beside the read bandwidth (read_bandwidth.h) to
// tell a memory-bound kernel from a compute-bound one: `kvengine bench attention` reports the KV
// bytes/s its multiply-adds would allow at this peak.
#pragma once

#include "base/thread_pool.h"

namespace kvengine {

struct FmaPeakOptions {
  double min_seconds = 0.05;  // Timed rounds continue until both limits are reached.
  int min_rounds = 3;
};

// f32 multiply-adds per second over all of the pool's threads, in units of 1e9 (each lane of a
// vector FMA counts one). One untimed round first (clock ramp, workers awake).
double MeasureFmaPeakGmacs(ThreadPool& pool, const FmaPeakOptions& options = {});

}  // namespace kvengine
