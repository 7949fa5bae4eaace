#include "gguf/gguf_layout.h"

#include <cstring>

namespace kvengine {
namespace {

// Copies between the row-major matrix and its column blocks, in the direction `pack` says.
void CopyColumnBlocks(bool pack, const uint8_t* src, int64_t rows, int64_t cols, size_t elem_bytes,
                      int64_t col_block, uint8_t* dst) {
  const size_t row_bytes = static_cast<size_t>(cols) * elem_bytes;
  for (int64_t j = 0; j < ColumnBlocks(cols, col_block); ++j) {
    const size_t width = static_cast<size_t>(ColumnBlockWidth(cols, col_block, j)) * elem_bytes;
    const size_t block = ColumnBlockOffset(rows, col_block, j, elem_bytes);
    const size_t column = static_cast<size_t>(j * col_block) * elem_bytes;
    for (int64_t r = 0; r < rows; ++r) {
      const size_t in_block = block + static_cast<size_t>(r) * width;
      const size_t in_rows = static_cast<size_t>(r) * row_bytes + column;
      if (pack) {
        std::memcpy(dst + in_block, src + in_rows, width);
      } else {
        std::memcpy(dst + in_rows, src + in_block, width);
      }
    }
  }
}

}  // namespace

void PackColumnBlocks(const uint8_t* src, int64_t rows, int64_t cols, size_t elem_bytes,
                      int64_t col_block, uint8_t* dst) {
  CopyColumnBlocks(/*pack=*/true, src, rows, cols, elem_bytes, col_block, dst);
}

void UnpackColumnBlocks(const uint8_t* src, int64_t rows, int64_t cols, size_t elem_bytes,
                        int64_t col_block, uint8_t* dst) {
  CopyColumnBlocks(/*pack=*/false, src, rows, cols, elem_bytes, col_block, dst);
}

}  // namespace kvengine
