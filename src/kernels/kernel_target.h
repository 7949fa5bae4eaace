// Which compiled instruction set the CPU kernels run on, and the override for it.
//
// Every kernel in src/kernels exists twice: a scalar reference (plain loops, the definition of
// the result) and a Highway SIMD version compiled once per target (on x86: AVX3, AVX2, SSE4,
// SSSE3 and a baseline, SCALAR with GCC or EMU128 with clang). On first use the best target this
// CPU supports is chosen, once, for all kernels together; ForceKernelTarget replaces that choice
// (the CLI exposes it as a flag; tests use it to run every target).
//
// A KernelTable holds one target's functions. The public functions (matmul.h, vector_ops.h,
// rope.h) call the active table; tests and benchmarks may also call tables directly.
//
// Thread safety: all functions here are thread-safe. Switching the target while kernels run on
// other threads is allowed (each call uses the table it loaded), but is meant for start-up and
// tests. Nothing here reads the environment; callers pass the name they were given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_tile.h"
#include "quant/weight_view.h"

namespace kvengine {

struct KernelTable {
  const char* target_name = "";  // Highway's name ("AVX3", "AVX2", "SSE4", ...) or "ref".
  int64_t hwy_target = 0;        // Highway target bit, 0 for the scalar reference.

  // Rows [row_begin, row_end) of MatMul (matmul.h) for every token: y[t * w.rows + r].
  // Requires IsMatMulFormat(w.type). Never reads outside those rows of w.
  void (*matmul_rows)(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                      int64_t row_end, float* y) = nullptr;
  // Float formats: a matmul_rows call with at most this many tokens streams its rows with no
  // per-call setup; one with more packs its tokens' activations first, once per call (so MatMul
  // gives such calls long row ranges). The block-quantized formats never have per-call setup.
  int64_t matmul_stream_tokens = 0;
  // Block-quantized formats: one weight row with n_tokens quantized activation rows
  // (quant_dot.h), y[t * y_stride] equal to kernels_ref::QuantDot bit for bit. MatMul quantizes
  // each token once per call and calls this per row; matmul_rows does the same for those formats.
  void (*quant_dot)(WeightFormat format, const uint8_t* row, int64_t cols, const uint8_t* xq,
                    size_t xq_stride, int64_t n_tokens, float* y, int64_t y_stride) = nullptr;
  // The same over one column range of a row, carrying each token's state (quant_dot.h, "Column
  // ranges"), kernels_ref::QuantDotRange bit for bit; MatMul walks matrices with it.
  kernels_internal::QuantDotRangeFn quant_dot_range = nullptr;
  // Block-quantized formats, optional (nullptr: none on this target): many tokens against a few
  // decoded rows at a time from tiled activations (quant_tile.h), kernels_ref::QuantDot bit for
  // bit. MatMul tiles a call's activations once and uses it when the call has at least
  // quant_tile_min_tokens tokens.
  kernels_internal::QuantTileRowsFn quant_tile_rows = nullptr;
  int64_t quant_tile_min_tokens = 0;
  // DequantizeRow (matmul.h).
  void (*dequantize_row)(GgmlType type, const uint8_t* src, int64_t n, float* dst) = nullptr;
  // vector_ops.h.
  void (*rms_norm)(const float* x, const float* w, int64_t n, float eps, float* out) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*swiglu)(const float* gate, const float* up, int64_t n, float* out) = nullptr;
  void (*add_in_place)(float* y, const float* x, int64_t n) = nullptr;
  // out[i] = e^x[i]: the exponential softmax and SwiGLU use (exposed to test its error budget).
  void (*exp)(const float* x, int64_t n, float* out) = nullptr;
  // out[i] = e^x[i] for x[i] <= 0 or NaN: the attention softmax's exponential (ExpNonPositive,
  // exp_simd-inl.h: within exp's budget, +0 from about -87.7 down); exposed for its tests.
  void (*exp_non_positive)(const float* x, int64_t n, float* out) = nullptr;
  // RopeApply (rope.h) on already computed cos / sin.
  void (*rope_apply)(float* x, int n_heads, int head_dim, int n_rot, bool neox,
                     const float* cos_sin) = nullptr;
};

// Chooses the kernels by name, case-insensitive: a Highway target this CPU runs ("AVX3", "AVX2",
// "SSE4", "SSSE3"; "SCALAR" and "EMU128" both name the baseline target, whichever was compiled),
// "ref" for the scalar reference, or "auto" for the best target again. An unknown or unsupported
// name is an InvalidArgument error listing the available names; the choice is then unchanged.
Status ForceKernelTarget(std::string_view name);

// The name of the kernels in use: "AVX3", ..., or "ref".
std::string ActiveKernelTarget();

// Names ForceKernelTarget accepts on this CPU, best first, "ref" last ("auto" not included).
std::vector<std::string> AvailableKernelTargets();

// The active table; chosen on first use.
const KernelTable& ActiveKernelTable();
// Every compiled SIMD target this CPU can run, best first, then the reference.
const std::vector<KernelTable>& AvailableKernelTables();
// The scalar reference.
const KernelTable& ReferenceKernelTable();

}  // namespace kvengine
