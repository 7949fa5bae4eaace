// The scalar reference kernels: plain loops that define each kernel's result. The SIMD kernels
// are tested against these (bit for bit where the operations are the same, within the budgets of
// kernel_tolerance.h where the summation order or the exponential differ). Also the "ref"
// KernelTable, so ForceKernelTarget("ref") runs the whole model on them.
//
// Arithmetic: the library compiles with -ffp-contract=off, so every a * b + c here is a multiply
// then an add, exactly as written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant_dot.h"
#include "quant/weight_view.h"

namespace kvengine::kernels_ref {

// F32 / F16 / BF16: for each row r in [row_begin, row_end): decodes the row, then for each
// token t sums w[r][c] * x[t][c] in float, c = 0, 1, ... in order. Block-quantized formats:
// quantizes each token's activations and takes QuantDot (quant_dot.h).
void MatMulRows(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y);
void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst);
// One row of a block-quantized `format` (cols elements) with one quantized activation row
// (quant_dot.h: its layout, and the exact definition this computes). MatMulRows uses it for
// every format with an ActivationFormatOf.
float QuantDot(WeightFormat format, const uint8_t* row, const uint8_t* xq, int64_t cols);
// One column range of a row for every token, carrying their states (quant_dot.h, "Column
// ranges"); QuantDot is the range [0, cols) from a zero state, then QuantDotFinish.
void QuantDotRange(WeightFormat format, const uint8_t* chunk, int64_t c0, int64_t width,
                   int64_t cols, const uint8_t* xq, size_t xq_stride, int64_t n_tokens,
                   QuantDotState* state);
// y[t * y_stride] = QuantDot(format, row, xq + t * xq_stride, cols) for t < n_tokens.
void QuantDotTokens(WeightFormat format, const uint8_t* row, int64_t cols, const uint8_t* xq,
                    size_t xq_stride, int64_t n_tokens, float* y, int64_t y_stride);

// Sum of squares in double; scale = 1 / sqrt(float(sum / n) + eps) in float; out = x * scale * w.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);
// m = max; x = std::exp(x - m); sum in double; x *= float(1 / sum).
void Softmax(float* x, int64_t n);
// out = gate / (1 + std::exp(-gate)) * up.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);
void AddInPlace(float* y, const float* x, int64_t n);
void Exp(const float* x, int64_t n, float* out);
// Per head and rotated pair (x0, x1) with angle i: x0' = x0 * cos_i - x1 * sin_i,
// x1' = x0 * sin_i + x1 * cos_i. Pairs are (2i, 2i + 1), or (i, i + n_rot / 2) when neox.
void RopeApply(float* x, int n_heads, int head_dim, int n_rot, bool neox, const float* cos_sin);

}  // namespace kvengine::kernels_ref
