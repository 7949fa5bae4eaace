// Micro-benchmarks of the row codecs at n = 128 (a common head_dim), SIMD default vs the scalar
// reference in the same run, so the ratio is measured on one machine at one time.
//
// Arguments: {dtype index in kAllKvDtypes, kernels (0 = default SIMD, 1 = scalar reference)}.
// bytes/s counts the encoded row (data + scale bytes): the KV memory a kernel reads or writes.
// items/s counts row elements.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "quant/codec.h"
#include "quant/kv_dtype.h"

namespace kvengine {
namespace {

constexpr int kN = 128;
constexpr int kRows = 64;  // Rows cycled through, so one row does not sit in registers.

struct Fixture {
  KvDtype dtype;
  RowCodecKernels kernels;
  RowFormat format;
  std::vector<float> x;        // kRows x kN floats.
  std::vector<float> q;        // kN floats.
  std::vector<uint8_t> data;   // kRows x format.data_bytes.
  std::vector<uint8_t> scale;  // kRows x format.scale_bytes.
  std::vector<float> out;      // kN floats.

  explicit Fixture(const benchmark::State& state)
      : dtype(kAllKvDtypes[state.range(0)]),
        kernels(state.range(1) == 0 ? DefaultRowCodecKernels() : ReferenceRowCodecKernels()),
        format(RowFormatOf(dtype, kN)),
        x(kRows * kN),
        q(kN),
        data(kRows * format.data_bytes),
        scale(kRows * format.scale_bytes + 1),
        out(kN) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    for (float& v : q) v = normal(rng);
    for (int r = 0; r < kRows; ++r) kernels.encode(dtype, Row(r), kN, Data(r), Scale(r));
  }
  const float* Row(int r) const { return x.data() + r * kN; }
  uint8_t* Data(int r) { return data.data() + r * format.data_bytes; }
  uint8_t* Scale(int r) { return scale.data() + r * format.scale_bytes; }

  void Finish(benchmark::State& state) const {
    const int64_t rows = static_cast<int64_t>(state.iterations());
    state.SetBytesProcessed(rows * static_cast<int64_t>(format.data_bytes + format.scale_bytes));
    state.SetItemsProcessed(rows * kN);
    state.SetLabel(std::string(KvDtypeName(dtype)) + " " + kernels.target_name);
  }
};

// Times `op(f, r)` on each row r in turn, then reports the rows' bytes.
template <typename Op>
void EachRow(benchmark::State& state, Op op) {
  Fixture f(state);
  int r = 0;
  for (auto _ : state) {
    op(f, r);
    r = (r + 1) % kRows;
  }
  f.Finish(state);
}

void BM_Encode(benchmark::State& state) {
  EachRow(state, [](Fixture& f, int r) {
    f.kernels.encode(f.dtype, f.Row(r), kN, f.Data(r), f.Scale(r));
    benchmark::ClobberMemory();
  });
}

void BM_Decode(benchmark::State& state) {
  EachRow(state, [](Fixture& f, int r) {
    f.kernels.decode(f.dtype, f.Data(r), f.Scale(r), kN, f.out.data());
    benchmark::ClobberMemory();
  });
}

void BM_Dot(benchmark::State& state) {
  EachRow(state, [](Fixture& f, int r) {
    benchmark::DoNotOptimize(f.kernels.dot(f.dtype, f.Data(r), f.Scale(r), f.q.data(), kN));
  });
}

void BM_Axpy(benchmark::State& state) {
  EachRow(state, [](Fixture& f, int r) {
    f.kernels.axpy(f.dtype, f.Data(r), f.Scale(r), 0.5f, kN, f.out.data());
    benchmark::ClobberMemory();
  });
}

constexpr int64_t kNumDtypes = static_cast<int64_t>(std::size(kAllKvDtypes));
#define KV_CODEC_BENCH(fn) \
  BENCHMARK(fn)->ArgsProduct({benchmark::CreateDenseRange(0, kNumDtypes - 1, 1), {0, 1}})
KV_CODEC_BENCH(BM_Encode);
KV_CODEC_BENCH(BM_Decode);
KV_CODEC_BENCH(BM_Dot);
KV_CODEC_BENCH(BM_Axpy);
#undef KV_CODEC_BENCH

}  // namespace
}  // namespace kvengine
