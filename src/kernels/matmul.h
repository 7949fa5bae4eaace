// Matrix multiplication of weights (any WeightFormat) with f32 activations, and the dequantization
// of one weight row (embedding lookup).
//
// Batch invariance (a contract every implementation keeps, tested in matmul_test.cc): the value of
// y[t * rows + r] is a function of weight row r and token t's activations only, bit for bit on a
// given kernel target. It does not depend on n_tokens, on the other tokens in the batch, on how a
// ThreadPool splits the rows, or on which tile shape computed it. Every dot product therefore has
// one fixed reduction order; threads split the work by output rows only. Float weights (F32,
// F16, BF16) multiply the f32 activations; block-quantized weights (Q8_0, Q4_0 ... Q6_K) multiply
// each token's activations quantized once per call to 8-bit blocks, as llama.cpp does
// (quant_dot.h) — a function of that token alone.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "quant/weight_view.h"

namespace kvengine {

// y[t * w.rows + r] = sum_c w[r][c] * x[t * w.cols + c]  for t < n_tokens, r < w.rows.
//   x: n_tokens x w.cols floats (token-major); y: n_tokens x w.rows floats (token-major); y must
//   not overlap x or the weights.
// Requires CheckWeightView(w).ok() (KV_CHECKed for the type) and n_tokens >= 0. `pool` may be
// nullptr (runs on the caller). Weights are read from memory once per call (per block of up to 192
// tokens) whatever the number of tokens, so batching tokens is cheaper than separate calls.
void MatMul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool);

// MatMul of several weight matrices with the same number of columns against the same
// activations: ys[i] = ws[i] x (as MatMul), computed in one ParallelFor over the union of their
// rows. One thread synchronization instead of one per matrix, and the threads' shares stay even
// across matrices of different heights (Q/K/V, gate/up). Bits are those of separate MatMul calls.
// Requires ws.size() == ys.size() and equal cols.
void MatMulMulti(std::span<const WeightView* const> ws, const float* x, int64_t n_tokens,
                 std::span<float* const> ys, ThreadPool* pool);

// dst[0, n) = the n elements encoded at src, decoded exactly (F32, F16, BF16, Q8_0; for Q8_0 n is a
// multiple of 32). Requires CheckMatMulType(type).ok() (KV_CHECKed).
void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst);

// dst[0, w.cols) = row r of w decoded exactly, whatever its layout (column blocks gathered): an
// embedding lookup. Requires 0 <= r < w.rows.
void DequantizeWeightRow(const WeightView& w, int64_t r, float* dst);

}  // namespace kvengine
