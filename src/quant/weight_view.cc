#include "quant/weight_view.h"

#include <string>

#include "gguf/gguf_reader.h"

namespace kvengine {

std::optional<WeightFormat> WeightFormatOf(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return WeightFormat::kF32;
    case GgmlType::kF16:
      return WeightFormat::kF16;
    case GgmlType::kBF16:
      return WeightFormat::kBF16;
    case GgmlType::kQ8_0:
      return WeightFormat::kQ8_0;
    case GgmlType::kQ4_0:
      return WeightFormat::kQ4_0;
    case GgmlType::kQ4_1:
      return WeightFormat::kQ4_1;
    case GgmlType::kQ5_0:
      return WeightFormat::kQ5_0;
    case GgmlType::kQ5_1:
      return WeightFormat::kQ5_1;
    case GgmlType::kQ4_K:
      return WeightFormat::kQ4_K;
    case GgmlType::kQ5_K:
      return WeightFormat::kQ5_K;
    case GgmlType::kQ6_K:
      return WeightFormat::kQ6_K;
    // Not implemented by any kernel (yet): listed one by one so that a new GgmlType must be
    // decided on here. (Q8_1 and Q8_K are ggml's activation formats; files do not store them.)
    case GgmlType::kQ8_1:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ8_K:
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ2_S:
    case GgmlType::kIQ4_XS:
    case GgmlType::kI8:
    case GgmlType::kI16:
    case GgmlType::kI32:
    case GgmlType::kI64:
    case GgmlType::kF64:
    case GgmlType::kIQ1_M:
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0:
    case GgmlType::kMXFP4:
      return std::nullopt;
  }
  return std::nullopt;  // A value outside the enum (from a cast): unsupported as well.
}

Status CheckMatMulType(GgmlType type) {
  if (WeightFormatOf(type).has_value()) return Status::Ok();
  return InvalidArgument(std::string("weight type ") + GgmlTypeName(type) +
                         " is not supported by the CPU kernels (supported: f32, f16, bf16, q8_0, q4_0, "
                         "q4_1, q5_0, q5_1, q4_K, q5_K, q6_K)");
}

Status CheckWeightView(const WeightView& w) {
  KV_RETURN_IF_ERROR(CheckMatMulType(w.type));
  // E.g. "weight 4096 x 896 (q4_K)": the shape and type every error below names.
  const std::string shape = std::to_string(w.rows) + " x " + std::to_string(w.cols) + " (" +
                            GgmlTypeName(w.type) + ")";
  if (w.rows < 1 || w.cols < 1) return InvalidArgument("weight shape " + shape + " is empty");
  const Result<uint64_t> row_bytes = GgmlRowBytes(w.type, static_cast<uint64_t>(w.cols));
  if (!row_bytes.ok()) {
    return InvalidArgument("weight " + shape + ": " + row_bytes.status().message());
  }
  if (w.row_bytes < *row_bytes) {
    return InvalidArgument("weight " + shape + ": row stride " + std::to_string(w.row_bytes) +
                           " is below the " + std::to_string(*row_bytes) + " bytes of a row");
  }
  if (w.data == nullptr) return InvalidArgument("weight " + shape + " has no data");
  if (w.col_block != 0) {
    if (!ColumnBlockType(w.type)) {
      return InvalidArgument("weight " + shape + ": column blocks are not defined for this type");
    }
    if (w.col_block < 0 || w.col_block % ColumnBlockAlign(w.type) != 0) {
      return InvalidArgument("weight " + shape + ": column block width " +
                             std::to_string(w.col_block) + " is not a positive multiple of " +
                             std::to_string(ColumnBlockAlign(w.type)));
    }
    if (w.row_bytes != *row_bytes) {
      return InvalidArgument("weight " + shape + ": column blocks need rows of exactly " +
                             std::to_string(*row_bytes) + " bytes, not " +
                             std::to_string(w.row_bytes));
    }
  }
  return Status::Ok();
}

int64_t PreferredColumnBlock(GgmlType type, int64_t cols) {
  if (!ColumnBlockType(type)) return 0;
  const int64_t align = ColumnBlockAlign(type);
  const int64_t max = align == kColumnBlockAlign ? kMaxColumnBlock : kMaxQuantColumnBlock;
  if (cols <= max) return 0;
  const int64_t blocks = (cols + max - 1) / max;
  const int64_t width = (cols + blocks - 1) / blocks;
  return (width + align - 1) / align * align;
}

GgufLoadOptions KernelLoadOptions() {
  GgufLoadOptions options;
  options.column_block = [](const GgufTensor& t) -> int64_t {
    return t.n_dims == 2 ? PreferredColumnBlock(t.type, t.dims[0]) : 0;
  };
  return options;
}

}  // namespace kvengine
