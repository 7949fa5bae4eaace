// MatMul / DequantizeRow: argument checks, the split of output rows over the thread pool, and the
// call into the active kernel table.
#include "kernels/matmul.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/check.h"
#include "kernels/kernel_target.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_tile.h"

namespace kvengine {
namespace {

// Output rows per unit of ParallelFor work: a multiple of every target's row tile (4), so tiles
// are never split between threads, and large enough that a unit amortizes its setup.
constexpr int64_t kRowsPerUnit = 16;
// Pieces per thread of the dynamic split (RunUnits) where a matmul_rows call has no setup.
constexpr int64_t kPiecesPerThread = 8;

// The activations of one call, quantized once per activation format that its weights need
// (quant_dot.h), before the rows are split over threads, and tiled (quant_tile.h) when the call
// goes through the token tiles. Each token's row depends only on that token's f32 activations, so
// batching cannot change it.
class QuantizedActivations {
 public:
  QuantizedActivations(const KernelTable& k, const float* x, int64_t n_tokens, int64_t cols)
      : x_(x),
        n_tokens_(n_tokens),
        cols_(cols),
        tiled_(k.quant_tile_rows != nullptr && n_tokens >= k.quant_tile_min_tokens) {}

  // Quantizes for `format`'s activation format unless done already; no-op for float formats.
  void Prepare(WeightFormat format) {
    const std::optional<ActivationFormat> af = ActivationFormatOf(format);
    if (!af.has_value()) return;
    std::vector<uint8_t>& buf = rows_[static_cast<size_t>(*af)];
    if (!buf.empty()) return;
    const size_t stride = Stride(*af);
    buf.resize(stride * static_cast<size_t>(n_tokens_));  // n_tokens rows of `stride` bytes.
    std::vector<uint8_t> row(tiled_ ? ActivationRowBytes(*af, cols_) : 0);
    for (int64_t t = 0; t < n_tokens_; ++t) {
      uint8_t* dst = buf.data() + static_cast<size_t>(t) * stride;
      if (!tiled_) {
        QuantizeActivations(*af, x_ + t * cols_, cols_, dst);
        continue;
      }
      QuantizeActivations(*af, x_ + t * cols_, cols_, row.data());
      TileActivations(*af, row.data(), cols_, dst);
    }
  }

  // Rows [row_begin, row_end) of w for every token: the quantized path when w's format has one
  // (Prepare must have run), else the kernel's f32 matmul_rows.
  void Rows(const KernelTable& k, const WeightView& w, int64_t row_begin, int64_t row_end,
            float* y) const {
    const std::optional<ActivationFormat> af = ActivationFormatOf(*WeightFormatOf(w.type));
    if (!af.has_value()) return k.matmul_rows(w, x_, n_tokens_, row_begin, row_end, y);
    const std::vector<uint8_t>& buf = rows_[static_cast<size_t>(*af)];
    KV_DCHECK(!buf.empty());
    if (tiled_)
      return k.quant_tile_rows(w, buf.data(), Stride(*af), n_tokens_, row_begin, row_end, y);
    kernels_internal::QuantMatMulRows(k.quant_dot, k.quant_dot_range, w, buf.data(), Stride(*af),
                                      n_tokens_, row_begin, row_end, y);
  }

 private:
  size_t Stride(ActivationFormat af) const {
    return tiled_ ? TiledActivationRowBytes(af, cols_) : ActivationRowBytes(af, cols_);
  }

  const float* x_;
  int64_t n_tokens_;
  int64_t cols_;
  bool tiled_;                    // Token tiles (KernelTable::quant_tile_rows).
  std::vector<uint8_t> rows_[3];  // Indexed by ActivationFormat.
};

// Runs run(unit_begin, unit_end) over [0, units) on the pool's threads, in pieces claimed by
// whichever thread is free (ThreadPool::ParallelForDynamic): kPiecesPerThread per thread where a
// call has no setup, so a thread that runs slow (a busy host) or starts late leaves its share to
// the others instead of keeping them waiting (on the Zen 4 VM the caller of a decode step's
// matmuls spent about 10% of its time waiting for the worker with a static split)
// (llama-1b decode at depth 0, 2 threads: 15.1 -> 16.9 tok/s, means of eight alternations,
// docs/runtime.md). Where each call packs its tokens' activations first (float formats, token
// tiles), one piece per thread, as long as a static split's.
template <class F>
void RunUnits(ThreadPool* pool, int64_t units, bool call_setup, const F& run) {
  if (pool == nullptr || pool->num_threads() == 1 || units == 1) return run(0, units);
  const int64_t pieces = pool->num_threads() * (call_setup ? 1 : kPiecesPerThread);
  pool->ParallelForDynamic(units, std::max<int64_t>(1, (units + pieces - 1) / pieces), run);
}

// Whether a matmul_rows call on w with n_tokens tokens has per-call setup (KernelTable).
bool HasCallSetup(const KernelTable& k, const WeightView& w, int64_t n_tokens) {
  return !ActivationFormatOf(*WeightFormatOf(w.type)).has_value() &&
         n_tokens > k.matmul_stream_tokens;
}

}  // namespace

void MatMul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  KV_CHECK(WeightFormatOf(w.type).has_value())
      << "no kernel for weight type " << GgmlTypeName(w.type);
  KV_CHECK(w.rows >= 1 && w.cols >= 1) << w.rows << " x " << w.cols;
  KV_CHECK(n_tokens >= 0) << n_tokens;
  KV_DCHECK(CheckWeightView(w).ok());
  if (n_tokens == 0) return;
  const KernelTable& k = ActiveKernelTable();
  QuantizedActivations xq(k, x, n_tokens, w.cols);
  xq.Prepare(*WeightFormatOf(w.type));
  const int64_t units = (w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
  RunUnits(pool, units, HasCallSetup(k, w, n_tokens), [&](int64_t unit_begin, int64_t unit_end) {
    xq.Rows(k, w, unit_begin * kRowsPerUnit, std::min(w.rows, unit_end * kRowsPerUnit), y);
  });
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
  QuantizedActivations xq(k, x, n_tokens, ws[0]->cols);
  for (const WeightView* w : ws) xq.Prepare(*WeightFormatOf(w->type));
  const auto run = [&](int64_t unit_begin, int64_t unit_end) {
    for (size_t i = 0; i < ws.size(); ++i) {
      const int64_t b = std::max(unit_begin, first_unit[i]);
      const int64_t e = std::min(unit_end, first_unit[i + 1]);
      if (b >= e) continue;
      const WeightView& w = *ws[i];
      xq.Rows(k, w, (b - first_unit[i]) * kRowsPerUnit,
              std::min(w.rows, (e - first_unit[i]) * kRowsPerUnit), ys[i]);
    }
  };
  bool call_setup = false;
  for (const WeightView* w : ws) call_setup = call_setup || HasCallSetup(k, *w, n_tokens);
  RunUnits(pool, first_unit[ws.size()], call_setup, run);
}

void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  KV_CHECK(WeightFormatOf(type).has_value()) << "no kernel for weight type " << GgmlTypeName(type);
  KV_CHECK(n >= 0) << n;
  if (n == 0) return;
  ActiveKernelTable().dequantize_row(type, src, n, dst);
}

void DequantizeWeightRow(const WeightView& w, int64_t r, float* dst) {
  KV_CHECK(r >= 0 && r < w.rows) << "row " << r << " of " << w.rows;
  ForEachRowChunk(w, r, [&](const uint8_t* chunk, int64_t c0, int64_t width) {
    DequantizeRow(w.type, chunk, width, dst + c0);
  });
}

}  // namespace kvengine
