// MeasureFmaPeakGmacs (fma_peak.h), compiled once per Highway target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/perf/fma_peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hwy/highway.h"
#include "bench/perf/fma_peak.h"
#include "quant/codec_simd-inl.h"

#ifndef KVENGINE_KERNELS_FMA_PEAK_RUN_
#define KVENGINE_KERNELS_FMA_PEAK_RUN_
namespace kvengine {
// What one thread's chains did (defined once for every target).
struct FmaRun {
  double macs = 0;
  float sink = 0;
};
// f16 codes F16FmaChains cycles through (1 KiB: stays in L1), a multiple of 4 vectors.
inline constexpr size_t kF16RingElements = 512;
}  // namespace kvengine
#endif

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The sum of 16 chains' accumulators: a value that depends on every result.
template <class V>
HWY_INLINE V SumChains(V a0, V a1, V a2, V a3, V a4, V a5, V a6, V a7, V a8, V a9, V a10, V a11,
                       V a12, V a13, V a14, V a15) {
  return hn::Add(
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
      hn::Add(hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)),
              hn::Add(hn::Add(a12, a13), hn::Add(a14, a15))));
}

// Runs `iterations` x kChains dependent-per-chain FMAs; returns multiply-adds done and a value
// that depends on every result (so nothing is optimized away).
FmaRun FmaChains(int64_t iterations) {
  const hn::ScalableTag<float> df;
  // 16 chains: enough to cover a 4-cycle FMA latency at up to 4 FMAs per cycle, and 16 of the
  // 32 AVX-512 registers (AVX2 has 16: the multiplier and addend then come from memory).
  constexpr int kChains = 16;
  auto acc = [&](int i) { return hn::Set(df, 1.0f + 1e-7f * float(i)); };
  auto a0 = acc(0), a1 = acc(1), a2 = acc(2), a3 = acc(3), a4 = acc(4), a5 = acc(5), a6 = acc(6),
       a7 = acc(7), a8 = acc(8), a9 = acc(9), a10 = acc(10), a11 = acc(11), a12 = acc(12),
       a13 = acc(13), a14 = acc(14), a15 = acc(15);
  const auto mul = hn::Set(df, 0.9999999f), add = hn::Set(df, 1e-8f);
  for (int64_t n = 0; n < iterations; ++n) {
    a0 = hn::MulAdd(a0, mul, add);
    a1 = hn::MulAdd(a1, mul, add);
    a2 = hn::MulAdd(a2, mul, add);
    a3 = hn::MulAdd(a3, mul, add);
    a4 = hn::MulAdd(a4, mul, add);
    a5 = hn::MulAdd(a5, mul, add);
    a6 = hn::MulAdd(a6, mul, add);
    a7 = hn::MulAdd(a7, mul, add);
    a8 = hn::MulAdd(a8, mul, add);
    a9 = hn::MulAdd(a9, mul, add);
    a10 = hn::MulAdd(a10, mul, add);
    a11 = hn::MulAdd(a11, mul, add);
    a12 = hn::MulAdd(a12, mul, add);
    a13 = hn::MulAdd(a13, mul, add);
    a14 = hn::MulAdd(a14, mul, add);
    a15 = hn::MulAdd(a15, mul, add);
  }
  const auto sum = SumChains(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);
  return {double(iterations) * kChains * double(hn::Lanes(df)), hn::GetLane(sum)};
}

// a_i = k_i * q + a_i for i < 4: one query head's multiply-adds with 4 converted vectors.
template <class V>
HWY_INLINE void MulAdd4(V k0, V k1, V k2, V k3, V q, V& a0, V& a1, V& a2, V& a3) {
  a0 = hn::MulAdd(k0, q, a0);
  a1 = hn::MulAdd(k1, q, a1);
  a2 = hn::MulAdd(k2, q, a2);
  a3 = hn::MulAdd(k3, q, a3);
}

// Accumulators updated as the attention kernel's float score tile is (attention_hwy.cc): each
// iteration converts kScorePos f16 vectors of `codes` (kF16RingElements, a ring in L1) and
// multiply-adds each into 4 accumulators with 4 multipliers (kF16MacsPerConversion per
// conversion). 32-register targets: 4 positions x 4 heads, 16 chains (16 + 4 + 4 registers).
// 16-register targets: 2 x 4, 8 chains (8 + 2 + 4), enough for two FMA pipes of latency 4; with
// 16 chains there GCC spilled accumulators and the figure (25 G/s per thread on Zen 3) was half
// of what the conversions allow (37-40 G/s in a hand-written 8-chain loop).
FmaRun F16FmaChains(int64_t iterations, const uint16_t* codes) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  static_assert(kF16MacsPerConversion == 4);
  auto acc = [&](int i) { return hn::Set(df, 1e-7f * float(i)); };
  const auto q0 = hn::Set(df, 0.25f), q1 = hn::Set(df, -0.5f), q2 = hn::Set(df, 0.125f),
             q3 = hn::Set(df, 1e-3f);
  const uint8_t* base = reinterpret_cast<const uint8_t*>(codes);
  size_t at = 0;
#if HWY_MAX_BYTES < 64
  auto a0 = acc(0), a1 = acc(1), a2 = acc(2), a3 = acc(3), a4 = acc(4), a5 = acc(5), a6 = acc(6),
       a7 = acc(7);
  for (int64_t n = 0; n < iterations; ++n) {
    const auto k0 = DecodeF16(base + 2 * at);
    const auto k1 = DecodeF16(base + 2 * (at + lanes));
    at = (at + 2 * lanes) % kF16RingElements;
    a0 = hn::MulAdd(k0, q0, a0);
    a1 = hn::MulAdd(k1, q0, a1);
    a2 = hn::MulAdd(k0, q1, a2);
    a3 = hn::MulAdd(k1, q1, a3);
    a4 = hn::MulAdd(k0, q2, a4);
    a5 = hn::MulAdd(k1, q2, a5);
    a6 = hn::MulAdd(k0, q3, a6);
    a7 = hn::MulAdd(k1, q3, a7);
  }
  const auto sum = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                           hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
  return {double(iterations) * 8 * double(lanes), hn::GetLane(sum)};
#else
  auto a0 = acc(0), a1 = acc(1), a2 = acc(2), a3 = acc(3), a4 = acc(4), a5 = acc(5), a6 = acc(6),
       a7 = acc(7), a8 = acc(8), a9 = acc(9), a10 = acc(10), a11 = acc(11), a12 = acc(12),
       a13 = acc(13), a14 = acc(14), a15 = acc(15);
  for (int64_t n = 0; n < iterations; ++n) {
    const auto k0 = DecodeF16(base + 2 * at);
    const auto k1 = DecodeF16(base + 2 * (at + lanes));
    const auto k2 = DecodeF16(base + 2 * (at + 2 * lanes));
    const auto k3 = DecodeF16(base + 2 * (at + 3 * lanes));
    at = (at + 4 * lanes) % kF16RingElements;
    MulAdd4(k0, k1, k2, k3, q0, a0, a1, a2, a3);
    MulAdd4(k0, k1, k2, k3, q1, a4, a5, a6, a7);
    MulAdd4(k0, k1, k2, k3, q2, a8, a9, a10, a11);
    MulAdd4(k0, k1, k2, k3, q3, a12, a13, a14, a15);
  }
  const auto sum = SumChains(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);
  return {double(iterations) * 16 * double(lanes), hn::GetLane(sum)};
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(FmaChains);
HWY_EXPORT(F16FmaChains);

namespace {

// Rounds of `run` on every thread of the pool, timed as MeasureFmaPeakGmacs describes.
template <class Run>
double MeasureChains(ThreadPool& pool, const FmaPeakOptions& options, const Run& run) {
  const int threads = pool.num_threads();
  std::vector<float> sinks(size_t(threads) * 16);  // One cache line per thread.
  double macs = 0;
  auto round = [&] {
    pool.ParallelFor(threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const FmaRun r = run();
        sinks[size_t(t) * 16] = r.sink;
        if (t == 0) macs = r.macs;  // Every thread does the same work.
      }
    });
  };
  round();
  int rounds = 0;
  double seconds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (rounds < options.min_rounds || seconds < options.min_seconds) {
    round();
    ++rounds;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  volatile float sink = sinks[0];
  (void)sink;
  return macs * threads * rounds / seconds / 1e9;
}

}  // namespace

double MeasureFmaPeakGmacs(ThreadPool& pool, const FmaPeakOptions& options) {
  constexpr int64_t kIterations = 1 << 20;  // ~5 ms per round and thread at 3.5 G FMA/s.
  return MeasureChains(pool, options, [] { return HWY_DYNAMIC_DISPATCH(FmaChains)(kIterations); });
}

double MeasureF16FmaPeakGmacs(ThreadPool& pool, const FmaPeakOptions& options) {
  constexpr int64_t kIterations = 1 << 20;
  // Random finite f16 codes in [-2, 2] (exponent below 16), the same ring for every thread.
  std::vector<uint16_t> codes(kF16RingElements);
  uint32_t x = 12345;
  for (uint16_t& c : codes) {
    x = x * 1664525u + 1013904223u;
    c = uint16_t((x >> 16) & 0xBFFF);
  }
  return MeasureChains(pool, options, [&codes] {
    return HWY_DYNAMIC_DISPATCH(F16FmaChains)(kIterations, codes.data());
  });
}

}  // namespace kvengine
#endif  // HWY_ONCE
