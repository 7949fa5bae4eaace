// Dot products of block-quantized weight rows with quantized activations, as llama.cpp computes
// them (its vec_dot_type): each token's f32 activations are first quantized to 8-bit blocks,
// then every weight block's integer codes are multiplied with the activation codes in exact
// integer arithmetic, and only the per-block integer sums are scaled and added in float.
//
// Activation formats (chosen by the weight format, ActivationFormatOf):
//   kQ8_0 (Q8_0, Q4_0, Q5_0 weights) and kQ8_1 (Q4_1, Q5_1): blocks of 32. Per block
//     amax = max |x|, d = amax / 127, id = 127 / amax (0 when amax == 0),
//     q = round-half-even(x * id) (ggml's x86 quantize_row_q8_0 / q8_1: _mm256_round_ps),
//     stored scale = f16(d) as a float; kQ8_1 also s = f16(d * sum q) (the block sum times d).
//     (A block holding a NaN gets d = NaN, so the NaN reaches the outputs as in f32 arithmetic.)
//     Row layout (cols = 32 nb): int8 q[cols], then float d[nb], then float s[nb] (0 for kQ8_0).
//   kQ8_K (Q4_K, Q5_K, Q6_K): blocks of 256 (ggml's quantize_row_q8_K_ref). Per block the
//     signed value of largest magnitude `max`, iscale = -127 / max, q = min(127, nearest_int(
//     iscale * x)) (round half to even, ggml's 1.5 * 2^23 trick), d = 1 / iscale (f32), and
//     bsums[16] = sums of 16 consecutive q. A block of zeros has d = 0, q = 0; one holding a NaN
//     d = NaN, q = 0.
//     Row layout: nb x Q8KBlock.
//
// The dot of one weight row with one quantized activation row (the definition every kernel
// target computes, QuantDot in kernel_ref.h):
//   32-element formats, block b: isum_b = sum_j w_code(j) * q(j), where w_code is the signed code
//     (Q8_0: q; Q4_0: q - 8; Q5_0: q - 16) or the unsigned one (Q4_1, Q5_1); then
//     term_b = (dw_b * dx_b) * float(isum_b)             (Q8_0, Q4_0, Q5_0)
//     term_b = (dw_b * dx_b) * float(isum_b) + m_b * s_b  (Q4_1, Q5_1),
//     with terms of blocks past the end (up to a multiple of 8) equal to +0. Lane accumulators
//     acc[k] (k < 8) start at +0 and take term_b for b = k, k + 8, ... in order; the result is
//     ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)).
//   K-quants, super-block b: isum_b = sum over sub-blocks s of sc_s * (sum_j code(j) * q(j)),
//     Q4_K / Q5_K with unsigned codes and the min term msum_b = sum_s mn_s * (bsum of the 32
//     elements of s); Q6_K with codes q6 - 32 (computed as q6 . q - 32 bsum). Then
//     acc = (acc + (dw_b * dx_b) * float(isum_b)) - (dmin_b * dx_b) * float(msum_b)  (Q4_K, Q5_K)
//     acc = acc + (dw_b * dx_b) * float(isum_b)                                      (Q6_K)
//     for b = 0, 1, ... in order, from acc = +0.
// Every integer sum is exact in int32 (|isum| <= 256 * 63 * 31 * 127 < 2^31). Each float
// operation is written out (no contraction), so a SIMD kernel that computes the integer sums in
// any order and the float steps in this order equals the reference bit for bit.
//
// Column ranges (a matrix in column blocks, weight_view.h): a dot product may be taken over
// consecutive ranges of columns [c0, c0 + width) of the row, each c0 a multiple of
// kQuantRangeAlign and each range but the row's last a multiple of it wide, with a
// QuantDotState per token carried from one range to the next: the 32-element formats' lane
// accumulators acc[0..8) (lane k takes the blocks b of the whole row with b % 8 == k, which the
// alignment to 8 blocks keeps), the K-quants' acc (lane 0). From a zero state, the ranges in
// order and QuantDotFinish give exactly QuantDot's operations, so its bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "quant/weight_view.h"

namespace kvengine {

enum class ActivationFormat { kQ8_0, kQ8_1, kQ8_K };

// A q8_K block (ggml's block_q8_K).
struct Q8KBlock {
  float d;            // 1 / iscale.
  int8_t qs[256];     // Codes in [-127, 127].
  int16_t bsums[16];  // bsums[k] = sum of qs[16 k .. 16 k + 16).
};
static_assert(sizeof(Q8KBlock) == 292);

// Column ranges of a dot product start at multiples of this many columns (above).
inline constexpr int64_t kQuantRangeAlign = 256;

// A dot product's accumulators between column ranges (above).
struct QuantDotState {
  float lane[8] = {};
};

// The dot product from its state after the row's last range: the 32-element formats'
// ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)), the K-quants' lane 0.
float QuantDotFinish(WeightFormat format, const QuantDotState& state);

// The activation format the weight format's dot products use, or nullopt for F32 / F16 / BF16
// (those multiply f32 activations directly).
std::optional<ActivationFormat> ActivationFormatOf(WeightFormat format);

// Bytes of one quantized activation row of `cols` elements (a whole number of blocks).
size_t ActivationRowBytes(ActivationFormat format, int64_t cols);

// dst[0, ActivationRowBytes) = x[0, cols) quantized (layouts above). Scalar; the same on every
// kernel target (it defines what the SIMD dot products multiply).
void QuantizeActivations(ActivationFormat format, const float* x, int64_t cols, uint8_t* dst);

namespace kernels_internal {

// One weight row (`format`, cols elements) with n_tokens quantized activation rows:
// y[t * y_stride] = kernels_ref::QuantDot(format, row, xq + t * xq_stride, cols), bit for bit
// (kernels_ref::QuantDotTokens's signature; KernelTable::quant_dot).
using QuantDotTokensFn = void (*)(WeightFormat format, const uint8_t* row, int64_t cols,
                                  const uint8_t* xq, size_t xq_stride, int64_t n_tokens, float* y,
                                  int64_t y_stride);

// One column range of one weight row with n_tokens quantized activation rows: `chunk` holds
// columns [c0, c0 + width) of the row (whole blocks of `format`; c0 and width as above), token
// t's quantized row of all `cols` columns is at xq + t * xq_stride, and state[t] is carried
// (kernels_ref::QuantDotRange's signature; KernelTable::quant_dot_range).
using QuantDotRangeFn = void (*)(WeightFormat format, const uint8_t* chunk, int64_t c0,
                                 int64_t width, int64_t cols, const uint8_t* xq, size_t xq_stride,
                                 int64_t n_tokens, QuantDotState* state);

// y[t * w.rows + r] = dot of w's row r with token t for r in [row_begin, row_end), t < n_tokens,
// where token t's quantized row is at xq + t * xq_stride. Every output equals its single-token
// QuantDot, so neither the row range nor n_tokens nor w's column blocks can change its bits.
// ggml rows go through `dot` a row at a time; a matrix in column blocks through `range`, one
// block of every row (a group of rows at a time) before the next, so that only that block's
// activations need to stay in L1.
void QuantMatMulRows(QuantDotTokensFn dot, QuantDotRangeFn range, const WeightView& w,
                     const uint8_t* xq, size_t xq_stride, int64_t n_tokens, int64_t row_begin,
                     int64_t row_end, float* y);

// The same from f32 activations: quantizes every token (ActivationFormatOf(w's format)), then
// QuantMatMulRows. For KernelTable::matmul_rows; MatMul quantizes once per call instead.
void QuantMatMulRowsFromFloat(QuantDotTokensFn dot, QuantDotRangeFn range, const WeightView& w,
                              const float* x, int64_t n_tokens, int64_t row_begin, int64_t row_end,
                              float* y);

}  // namespace kernels_internal

}  // namespace kvengine
