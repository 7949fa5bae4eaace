// Token tiles of the quantized matmul (prefill): many tokens against a few decoded weight rows at
// a time, with the same bits as the row-at-a-time dot products (quant_dot.h).
//
// A row-at-a-time kernel must reduce each block's integer products to one sum per (row, token,
// block) before it can scale it: with blocks of 32 bytes in consecutive lanes that reduction (a
// transpose of eight vectors) cost more than the products. Here both operands are stored
// transposed in 4-byte groups, so that accumulating the products of a 256-column group's
// vectors leaves block k's sums in lane k (AVX2's eight 32-byte vectors) or lanes k and k + 8
// (AVX-512's four 64-byte ones) only.
//
// Tiled order of a group of 256 columns (8 blocks of 32): element e (block k = e / 32, 4-byte
// group j = (e % 32) / 4) lies at byte 32 j + 4 k + e % 4 (TiledOffset): 32-byte vector j holds
// group j of every block.
//
// Tiled activation row (TileActivations), per token, from its quantized row (quant_dot.h), G =
// ceil(cols / 256) groups, the columns past `cols` padded:
//   kQ8_0 / kQ8_1: codes[256 G] in tiled order, each code + 128 as a byte (so the activations are
//     the unsigned operand of the x86 u8 x s8 products; padding 128); then float d[8 G] and
//     float s[8 G] of the blocks (padding +0).
//   kQ8_K: codes[256 G] in tiled order, as they are (the weight codes are the unsigned operand);
//     then float d[G]; then int16 bsums[16 G].
// Rows are TiledActivationRowBytes apart, a multiple of 64.
//
// The block sums are exact integers whatever the order of their products, and the float steps
// follow quant_dot.h's definition, so a tile kernel's every output equals kernels_ref::QuantDot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant_dot.h"
#include "quant/weight_view.h"

namespace kvengine {

// Byte offset of element e (< 256) of a group in the tiled order (above).
constexpr int64_t TiledOffset(int64_t e) {
  const int64_t k = e / 32, j = (e % 32) / 4;
  return 32 * j + 4 * k + e % 4;
}

// Bytes of one tiled activation row of `cols` columns (a multiple of 64).
size_t TiledActivationRowBytes(ActivationFormat format, int64_t cols);

// dst[0, TiledActivationRowBytes) = the quantized row xq (ActivationRowBytes(format, cols)
// bytes, quant_dot.h) in the tiled layout (above).
void TileActivations(ActivationFormat format, const uint8_t* xq, int64_t cols, uint8_t* dst);

namespace kernels_internal {

// y[t * w.rows + r] = dot of w's row r with token t for r in [row_begin, row_end), t < n_tokens,
// token t's tiled activation row at xt + t * xt_stride (w's activation format); every output
// equal to kernels_ref::QuantDot bit for bit (KernelTable::quant_tile_rows).
using QuantTileRowsFn = void (*)(const WeightView& w, const uint8_t* xt, size_t xt_stride,
                                 int64_t n_tokens, int64_t row_begin, int64_t row_end, float* y);

}  // namespace kernels_internal

}  // namespace kvengine
