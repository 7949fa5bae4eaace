// In-memory layouts of a tensor's bytes other than the file's: what a loader may ask a GgufFile
// copy to hold (GgufLoadOptions, gguf_reader.h) so that the CPU kernels stream it faster.
//
// Column blocks. A 2-D tensor of `rows` rows of `cols` fixed-size elements (ggml: cols = ne[0], the
// contiguous dimension) in column blocks of width B is stored as ceil(cols / B) row-major
// sub-matrices, one after another: block j holds columns [j * B, min(cols, (j + 1) * B)) of every
// row, so its row r is width_j contiguous elements at
//   ColumnBlockOffset(rows, B, j, elem) + r * width_j * elem,
// and every block but the last is rows x B. The tensor's size does not change. A decode matmul
// then streams one block's rows while only that block's B activations stay in L1, instead of a
// whole row's (docs/runtime.md, "Column blocks"). For a block-quantized type the "elements" of
// these functions are its blocks (ggml's: 32 or 256 columns, bytes_per_block bytes), and B a
// whole number of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/gguf_types.h"

namespace kvengine {

// The tensor types column blocks are defined for: the float types the CPU kernels multiply
// directly (F32, F16, BF16; one column an element) and the block-quantized types they multiply
// with quantized activations (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; one ggml block an
// element).
inline bool ColumnBlockType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

// Column block widths of `type` are whole multiples of this many columns: 64 for the float types
// (every block but the last a whole number of vectors on every x86 target), 256 for the
// quantized ones (a K-quant super-block; eight 32-column blocks, so that the quantized dot
// products keep numbering their eight lane accumulators as over a whole row, quant_dot.h).
inline int64_t ColumnBlockAlign(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16 ? 64 : 256;
}

// Columns of block j (the last one may be narrower). Requires 0 <= j < ColumnBlocks(cols, B).
inline int64_t ColumnBlockWidth(int64_t cols, int64_t col_block, int64_t j) {
  const int64_t begin = j * col_block;
  return cols - begin < col_block ? cols - begin : col_block;
}

// Blocks of a row of `cols` columns: ceil(cols / B).
inline int64_t ColumnBlocks(int64_t cols, int64_t col_block) {
  return (cols + col_block - 1) / col_block;
}

// Byte offset of block j from the start of the tensor.
inline size_t ColumnBlockOffset(int64_t rows, int64_t col_block, int64_t j, size_t elem_bytes) {
  return static_cast<size_t>(j) * static_cast<size_t>(col_block) * static_cast<size_t>(rows) *
         elem_bytes;
}

// dst = src (rows x cols elements of elem_bytes, row-major) in column blocks of col_block.
// dst and src must not overlap; each holds rows * cols * elem_bytes bytes. Requires
// col_block >= 1.
void PackColumnBlocks(const uint8_t* src, int64_t rows, int64_t cols, size_t elem_bytes,
                      int64_t col_block, uint8_t* dst);

// The inverse: dst = the row-major matrix that PackColumnBlocks packed into src.
void UnpackColumnBlocks(const uint8_t* src, int64_t rows, int64_t cols, size_t elem_bytes,
                        int64_t col_block, uint8_t* dst);

}  // namespace kvengine
