// MatMul / DequantizeRow: argument checks, the split of output rows over the thread pool, and the
// call into the active kernel table.
#include "kernels/matmul.h"

#include <algorithm>

#include "base/check.h"
#include "kernels/kernel_target.h"

namespace kvengine {
namespace {

// Output rows per unit of ParallelFor work: a multiple of every target's row tile (4), so tiles
// are never split between threads, and large enough that a unit amortizes its setup.
constexpr int64_t kRowsPerUnit = 16;

}  // namespace

void MatMul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  KV_CHECK(WeightFormatOf(w.type).has_value())
      << "no kernel for weight type " << GgmlTypeName(w.type);
  KV_CHECK(w.rows >= 1 && w.cols >= 1) << w.rows << " x " << w.cols;
  KV_CHECK(n_tokens >= 0) << n_tokens;
  KV_DCHECK(CheckWeightView(w).ok());
  if (n_tokens == 0) return;
  const KernelTable& k = ActiveKernelTable();
  const int64_t units = (w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
  const auto run = [&](int64_t unit_begin, int64_t unit_end) {
    k.matmul_rows(w, x, n_tokens, unit_begin * kRowsPerUnit,
                  std::min(w.rows, unit_end * kRowsPerUnit), y);
  };
  if (pool == nullptr || units == 1) {
    run(0, units);
  } else {
    pool->ParallelFor(units, run);
  }
}

void MatMulMulti(std::span<const WeightView* const> ws, const float* x, int64_t n_tokens,
                 std::span<float* const> ys, ThreadPool* pool) {
  KV_CHECK(ws.size() == ys.size()) << ws.size() << " matrices, " << ys.size() << " outputs";
  KV_CHECK(n_tokens >= 0) << n_tokens;
  if (n_tokens == 0 || ws.empty()) return;
  // first_unit[i]: index of matrix i's first unit in the concatenation of every matrix's units.
  constexpr size_t kMaxMatrices = 8;
  KV_CHECK(ws.size() <= kMaxMatrices) << ws.size();
  int64_t first_unit[kMaxMatrices + 1] = {0};
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightView& w = *ws[i];
    KV_CHECK(WeightFormatOf(w.type).has_value())
        << "no kernel for weight type " << GgmlTypeName(w.type);
    KV_CHECK(w.rows >= 1 && w.cols == ws[0]->cols) << w.rows << " x " << w.cols;
    KV_DCHECK(CheckWeightView(w).ok());
    first_unit[i + 1] = first_unit[i] + (w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
  }
  const KernelTable& k = ActiveKernelTable();
  const auto run = [&](int64_t unit_begin, int64_t unit_end) {
    for (size_t i = 0; i < ws.size(); ++i) {
      const int64_t b = std::max(unit_begin, first_unit[i]);
      const int64_t e = std::min(unit_end, first_unit[i + 1]);
      if (b >= e) continue;
      const WeightView& w = *ws[i];
      k.matmul_rows(w, x, n_tokens, (b - first_unit[i]) * kRowsPerUnit,
                    std::min(w.rows, (e - first_unit[i]) * kRowsPerUnit), ys[i]);
    }
  };
  const int64_t units = first_unit[ws.size()];
  if (pool == nullptr || units == 1) {
    run(0, units);
  } else {
    pool->ParallelFor(units, run);
  }
}

void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  KV_CHECK(WeightFormatOf(type).has_value()) << "no kernel for weight type " << GgmlTypeName(type);
  KV_CHECK(n >= 0) << n;
  if (n == 0) return;
  ActiveKernelTable().dequantize_row(type, src, n, dst);
}

}  // namespace kvengine
