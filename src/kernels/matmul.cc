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

void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  KV_CHECK(WeightFormatOf(type).has_value()) << "no kernel for weight type " << GgmlTypeName(type);
  KV_CHECK(n >= 0) << n;
  if (n == 0) return;
  ActiveKernelTable().dequantize_row(type, src, n, dst);
}

}  // namespace kvengine
