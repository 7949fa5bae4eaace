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

// The same chains fed by f16 values: every kF16MacsPerConversion multiply-adds take one vector
// of f16 converted to f32 (kvengine's f16 decoder, DecodeF16: vcvtph2ps where the CPU has F16C)
// from a 1 KiB buffer in L1. That is decode attention's arithmetic over f16 KV at GQA 4 (each K
// and V element multiplies 4 query heads), with nothing else: no reductions, softmax or misses.
// Where the conversion shares the multiply-adds' ports (Intel cores: vcvtph2ps zmm takes both
// of the vector ports the FMAs use) this is well below MeasureFmaPeakGmacs; where it runs on a
// port of its own (AMD Zen) it is close to it.
inline constexpr int kF16MacsPerConversion = 4;
double MeasureF16FmaPeakGmacs(ThreadPool& pool, const FmaPeakOptions& options = {});

}  // namespace kvengine
