// A weight matrix as the kernels see it: a view of ggml-layout bytes (usually inside the mmapped
// GGUF file), and the weight formats the matmul kernels support.
//
// Layout (ggml): the tensor's ne0 = `cols` elements of one row are contiguous, encoded as the
// type's blocks; rows (ne1 = `rows`) follow each other `row_bytes` apart. Supported formats:
//   F32   cols x binary32
//   F16   cols x binary16                      (half.h)
//   BF16  cols x bfloat16                      (half.h)
//   Q8_0  cols / 32 blocks of 34 bytes: f16 scale d, then 32 x int8 q; element = d * q.
//   Q4_0, Q4_1, Q5_0, Q5_1 (blocks of 32) and Q4_K, Q5_K, Q6_K (super-blocks of 256): the block
//         layouts and decoding rules are in weight_blocks.h.
//   cols must be a whole number of the format's blocks (32, or 256 for the K-quants).
// Multi-byte values are little-endian; no alignment is required of `data` or `row_bytes`.
//
// Column blocks (col_block > 0; the float and block-quantized types of ColumnBlockType,
// gguf_layout.h): the same elements stored as ceil(cols / col_block) row-major sub-matrices of
// col_block columns, one after another; ColumnBlockOf gives block j as a strided matrix. A float
// matrix with more columns than kMaxColumnBlock (a quantized one: kMaxQuantColumnBlock) is
// loaded so (PreferredColumnBlock) because a decode step then keeps
// one block's activations in L1 while it streams the block's rows: with whole rows of 4096 or
// more F16 columns the activations (16 KiB and up) fell out of a 32 KiB L1 and a row streamed
// at 0.65-0.75 of the speed of a 2048-column one (docs/runtime.md, "Column blocks"). The layout
// never changes a result: every dot product is the same multiply-adds in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kvengine/status.h"
#include "gguf/gguf_layout.h"
#include "gguf/gguf_types.h"

namespace kvengine {

struct GgufLoadOptions;  // gguf/gguf_reader.h

// A non-owning view; the bytes must outlive every call that uses it.
struct WeightView {
  GgmlType type = GgmlType::kF32;
  int64_t rows = 0;               // ne1: output features.
  int64_t cols = 0;               // ne0: input features, contiguous within a row.
  const uint8_t* data = nullptr;  // Row r starts at data + r * row_bytes (col_block == 0).
  size_t row_bytes = 0;           // >= GgmlRowBytes(type, cols); == it when col_block > 0.
  int64_t col_block = 0;          // 0: ggml rows; else column blocks of this width (above).
};

// Column block widths of the float types are multiples of this many elements, so that every
// block but the last is a whole number of vectors on every target (at most 16 floats a vector on
// x86); the quantized types' are multiples of 256 (ColumnBlockAlign, gguf_layout.h).
inline constexpr int64_t kColumnBlockAlign = 64;
// The widest column block PreferredColumnBlock picks. A decode step keeps one token's 2048 F32
// activations (8 KiB) in L1 beside the streamed rows; 16 KiB already fell out (a 5632-column
// matrix streamed 22 GB/s per thread with 4096 activations in use, 29-30 with 2048). Matrices of
// at most this many columns stay in ggml rows.
inline constexpr int64_t kMaxColumnBlock = 2048;
// The same for the quantized types, whose activations take about 1.1 bytes a column (int8 codes
// and a scale per block, quant_dot.h) instead of 4: one-token Q8_0 rows streamed 23-25 GB/s per
// thread at 4096-11008 columns (12-14 KiB of activations) and 12.5-13.3 at 14336.
inline constexpr int64_t kMaxQuantColumnBlock = 8192;

// The column block width a loader should store a `type` weight matrix of `cols` columns in
// (GgufLoadOptions), or 0 for ggml rows: for F32, F16 and BF16 with more than kMaxColumnBlock
// columns, the fewest blocks of at most kMaxColumnBlock, of equal width rounded up to
// kColumnBlockAlign (5632 -> 3 blocks of 1920, the last 1792; 11008 -> 1856); for the quantized
// types the same with kMaxQuantColumnBlock and 256 (14336 -> 2 blocks of 7168). As few blocks as
// possible because a batch's tiles pay per block (the prefill and batch matmuls over 6 blocks ran
// 4-9% slower than over rows; with blocks of 512, 7-25%: the blocks lie a power of two apart and
// share L2 sets).
int64_t PreferredColumnBlock(GgmlType type, int64_t cols);

// Load options (GgufFile::Open, FromBytes) that store every 2-D tensor in the layout
// PreferredColumnBlock picks for it; a mapped file keeps the file's layout.
GgufLoadOptions KernelLoadOptions();

// Columns [c0, c0 + width) of every row, a strided matrix: row r at base + r * stride.
struct ColumnBlockView {
  const uint8_t* base = nullptr;
  size_t stride = 0;
  int64_t c0 = 0;
  int64_t width = 0;
};
// 1 for ggml rows (the block is the whole matrix); else ceil(cols / col_block). Inline: the
// kernels ask per row tile.
inline int64_t NumColumnBlocks(const WeightView& w) {
  return w.col_block == 0 ? 1 : ColumnBlocks(w.cols, w.col_block);
}
// Block j < NumColumnBlocks(w).
inline ColumnBlockView ColumnBlockOf(const WeightView& w, int64_t j) {
  if (w.col_block == 0) return {w.data, w.row_bytes, 0, w.cols};
  // In units of the type's blocks: one column each for the float types (gguf_layout.h).
  const GgmlTypeTraits t = GetGgmlTypeTraits(w.type);
  const int64_t width = ColumnBlockWidth(w.cols, w.col_block, j);
  return {w.data + ColumnBlockOffset(w.rows, w.col_block / t.block_size, j, t.bytes_per_block),
          static_cast<size_t>(width / t.block_size) * t.bytes_per_block, j * w.col_block, width};
}

// f(chunk, c0, width) for each column block's part of row r: `width` elements of columns
// [c0, c0 + width) at `chunk` (one call, the whole row, for ggml rows).
template <class F>
void ForEachRowChunk(const WeightView& w, int64_t r, const F& f) {
  for (int64_t j = 0; j < NumColumnBlocks(w); ++j) {
    const ColumnBlockView b = ColumnBlockOf(w, j);
    f(b.base + static_cast<size_t>(r) * b.stride, b.c0, b.width);
  }
}

// The weight formats the kernels implement. Adding one means adding it here, to WeightFormatOf
// and to each kernel's exhaustive switch (matmul_ref.cc, matmul_hwy.cc).
enum class WeightFormat { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K };

// The kernel format of a ggml type, or nullopt when no kernel supports it.
std::optional<WeightFormat> WeightFormatOf(GgmlType type);

// OK for the types of WeightFormat; otherwise an InvalidArgument error naming the type, e.g.
// "weight type iq2_xxs is not supported by the CPU kernels (supported: f32, f16, bf16, q8_0, ...)".
Status CheckMatMulType(GgmlType type);

// CheckMatMulType plus the shape: rows, cols >= 1, cols a whole number of blocks, row_bytes large
// enough, data non-null; column blocks only for the types of ColumnBlockType, as multiples of
// ColumnBlockAlign (gguf_layout.h), with row_bytes exactly a row. For loaders to call once per
// tensor; MatMul only KV_CHECKs.
Status CheckWeightView(const WeightView& w);

}  // namespace kvengine
