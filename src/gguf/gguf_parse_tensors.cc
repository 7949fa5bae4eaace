// Tensor infos and the placement of their data in the data section.
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/checked_math.h"
#include "gguf/gguf_parse.h"

namespace kvengine::gguf_internal {
namespace {

constexpr uint64_t kMaxDim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

std::string TensorContext(uint64_t index, std::string_view name) {
  return fmt::format("tensor {} '{}': ", index, Printable(name));
}

// Reads n_dims and the dims; each dim must be in [1, INT64_MAX].
Status ReadShape(ByteReader& reader, GgufTensor* tensor) {
  KV_RETURN_IF_ERROR(reader.Read(&tensor->n_dims, "n_dims"));
  if (tensor->n_dims > kGgufMaxDims) {
    return Corrupt(
        fmt::format("n_dims {} exceeds the maximum of {}", tensor->n_dims, kGgufMaxDims));
  }
  tensor->dims.fill(1);
  for (uint32_t d = 0; d < tensor->n_dims; ++d) {
    uint64_t dim = 0;
    KV_RETURN_IF_ERROR(reader.Read(&dim, fmt::format("dim {}", d)));
    if (dim == 0 || dim > kMaxDim) {
      return Corrupt(fmt::format("dim {} is {}, must be in [1, {}]", d, dim, kMaxDim));
    }
    tensor->dims[d] = static_cast<int64_t>(dim);
  }
  return Status::Ok();
}

// Computes n_elements and byte_size; the row must be a whole number of blocks.
Status ComputeSizes(GgufTensor* tensor) {
  int64_t elements = 1;
  for (uint32_t d = 0; d < tensor->n_dims; ++d) {
    if (!CheckedMul<int64_t>(elements, tensor->dims[d], &elements)) {
      return OutOfRange(fmt::format("element count of shape [{}] overflows int64",
                                    fmt::join(tensor->shape(), ", ")));
    }
  }
  tensor->n_elements = elements;
  Result<uint64_t> bytes = GgmlTensorBytes(tensor->type, tensor->shape());
  if (!bytes.ok()) {
    return Status(bytes.status().code(),
                  fmt::format("shape [{}] of type {}: {}", fmt::join(tensor->shape(), ", "),
                              GgmlTypeName(tensor->type), bytes.status().message()));
  }
  tensor->byte_size = *bytes;
  return Status::Ok();
}

Status ReadTensorInfo(ByteReader& reader, GgufTensor* tensor) {
  KV_RETURN_IF_ERROR(ReadShape(reader, tensor));
  uint32_t type_id = 0;
  KV_RETURN_IF_ERROR(reader.Read(&type_id, "type"));
  KV_ASSIGN_OR_RETURN(tensor->type, GgmlTypeFromId(type_id));
  KV_RETURN_IF_ERROR(reader.Read(&tensor->offset, "offset"));
  return ComputeSizes(tensor);
}

std::string ByteRange(const GgufTensor& t) {
  return fmt::format("[{}, {})", t.offset, t.offset + t.byte_size);
}

}  // namespace

Status ParseTensorInfos(ByteReader& reader, uint64_t tensor_count, GgufContents* out) {
  // The caller bounded tensor_count by the bytes left, so this reserve is at most file-sized.
  out->tensors.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    uint64_t start = reader.position();
    GgufTensor tensor{};
    KV_RETURN_IF_ERROR(
        reader.ReadString(&tensor.name, fmt::format("tensor {} name", i), kGgufMaxTensorNameBytes));
    std::string context =
        fmt::format("tensor {} '{}' at byte {}: ", i, Printable(tensor.name), start);
    KV_RETURN_IF_ERROR(WithContext(ReadTensorInfo(reader, &tensor), context));
    auto [it, inserted] = out->tensor_index.emplace(tensor.name, out->tensors.size());
    if (!inserted) {
      return Corrupt(context +
                     fmt::format("duplicate tensor name (first is tensor {})", it->second));
    }
    out->tensors.push_back(tensor);
  }
  return Status::Ok();
}

Status PlaceTensorData(std::span<const uint8_t> file, uint64_t infos_end, GgufContents* out) {
  uint64_t data_offset = 0;
  if (!CheckedAlignUp(infos_end, out->alignment, &data_offset)) {
    return OutOfRange(fmt::format("data section start overflows: byte {} aligned to {}", infos_end,
                                  out->alignment));
  }
  if (data_offset > file.size()) {
    if (!out->tensors.empty()) {
      return Corrupt(
          fmt::format("file ends at byte {}, before the data section starts at byte {} "
                      "(tensor infos end at byte {}, alignment {})",
                      file.size(), data_offset, infos_end, out->alignment));
    }
    data_offset = file.size();  // No tensors: the data section (and its padding) may be absent.
  }
  out->data_offset = data_offset;
  out->data_size = file.size() - data_offset;

  for (size_t i = 0; i < out->tensors.size(); ++i) {
    GgufTensor& t = out->tensors[i];
    if (t.offset % out->alignment != 0) {
      return Corrupt(
          TensorContext(i, t.name) +
          fmt::format("offset {} is not a multiple of the alignment {}", t.offset, out->alignment));
    }
    uint64_t end = 0;
    if (!CheckedAdd(t.offset, t.byte_size, &end) || end > out->data_size) {
      return Corrupt(TensorContext(i, t.name) +
                     fmt::format("data at offset {} ({} bytes) runs past the end of the data "
                                 "section (size {})",
                                 t.offset, t.byte_size, out->data_size));
    }
    t.data = file.subspan(data_offset + t.offset, t.byte_size);
  }

  // Overlaps: sorted by offset, each tensor must end at or before the next one starts. Every
  // range was checked above to lie inside the data section, so the ends do not overflow.
  std::vector<size_t> order(out->tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out->tensors[a].offset < out->tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = out->tensors[order[k - 1]];
    const GgufTensor& cur = out->tensors[order[k]];
    if (prev.offset + prev.byte_size > cur.offset) {
      return Corrupt(TensorContext(order[k], cur.name) +
                     fmt::format("data {} overlaps tensor {} '{}' at {}", ByteRange(cur),
                                 order[k - 1], Printable(prev.name), ByteRange(prev)));
    }
  }
  return Status::Ok();
}

}  // namespace kvengine::gguf_internal
