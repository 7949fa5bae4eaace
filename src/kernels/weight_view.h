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
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/status.h"
#include "gguf/gguf_types.h"

namespace kvengine {

// A non-owning view; the bytes must outlive every call that uses it.
struct WeightView {
  GgmlType type = GgmlType::kF32;
  int64_t rows = 0;               // ne1: output features.
  int64_t cols = 0;               // ne0: input features, contiguous within a row.
  const uint8_t* data = nullptr;  // Row r starts at data + r * row_bytes.
  size_t row_bytes = 0;           // >= GgmlRowBytes(type, cols).
};

// The weight formats the kernels implement. Adding one means adding it here, to WeightFormatOf
// and to each kernel's exhaustive switch (matmul_ref.cc, matmul_hwy.cc).
enum class WeightFormat { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K };

// The kernel format of a ggml type, or nullopt when no kernel supports it.
std::optional<WeightFormat> WeightFormatOf(GgmlType type);

// OK for the types of WeightFormat; otherwise an InvalidArgument error naming the type, e.g.
// "weight type iq2_xxs is not supported by the CPU kernels (supported: f32, f16, bf16, q8_0, ...)".
Status CheckMatMulType(GgmlType type);

// CheckMatMulType plus the shape: rows, cols >= 1, cols a whole number of blocks, row_bytes large
// enough, data non-null. For loaders to call once per tensor; MatMul only KV_CHECKs.
Status CheckWeightView(const WeightView& w);

}  // namespace kvengine
