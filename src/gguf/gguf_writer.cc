#include "gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "base/checked_math.h"
#include "gguf/gguf_encoding.h"

namespace kvengine {
namespace {

// Forwards a filler's writes, counting them and refusing any beyond the tensor's size.
class CountingSink : public GgufSink {
 public:
  CountingSink(GgufSink& target, std::string_view name, uint64_t limit)
      : target_(target), name_(name), limit_(limit) {}

  Status Write(std::span<const uint8_t> bytes) override {
    if (bytes.size() > limit_ - written_) {
      return InvalidArgument(
          fmt::format("tensor '{}': filler wrote more than its {} bytes", name_, limit_));
    }
    written_ += bytes.size();
    return target_.Write(bytes);
  }
  uint64_t written() const { return written_; }

 private:
  GgufSink& target_;
  std::string_view name_;
  uint64_t limit_;
  uint64_t written_ = 0;  // Invariant: written_ <= limit_.
};

class VectorSink : public GgufSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  Status Write(std::span<const uint8_t> bytes) override {
    out_->insert(out_->end(), bytes.begin(), bytes.end());
    return Status::Ok();
  }

 private:
  std::vector<uint8_t>* out_;
};

class FileSink : public GgufSink {
 public:
  FileSink(std::FILE* file, std::string_view path) : file_(file), path_(path) {}
  Status Write(std::span<const uint8_t> bytes) override {
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
      return Internal(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    }
    return Status::Ok();
  }

 private:
  std::FILE* file_;
  std::string_view path_;
};

// Writes `n` zero bytes.
Status WriteZeros(GgufSink& sink, uint64_t n) {
  static constexpr uint8_t kZeros[4096] = {};
  while (n > 0) {
    uint64_t chunk = std::min<uint64_t>(n, sizeof(kZeros));
    KV_RETURN_IF_ERROR(sink.Write(std::span<const uint8_t>(kZeros, chunk)));
    n -= chunk;
  }
  return Status::Ok();
}

}  // namespace

Status GgufWriter::SetAlignment(uint32_t alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    return InvalidArgument(fmt::format("alignment {} is not a non-zero power of two", alignment));
  }
  alignment_ = alignment;
  alignment_key_ = true;
  return Status::Ok();
}

Status GgufWriter::AppendKv(std::string_view key, GgufValueType type,
                            std::span<const uint8_t> encoded) {
  if (key.size() > kGgufMaxKeyBytes) {
    return InvalidArgument(fmt::format("metadata key of {} bytes exceeds the limit of {}",
                                       key.size(), kGgufMaxKeyBytes));
  }
  if (key == kGgufAlignmentKey) {
    if (type != GgufValueType::kU32) {
      return InvalidArgument(
          fmt::format("{} must be a u32, not {}", kGgufAlignmentKey, GgufValueTypeName(type)));
    }
    uint32_t alignment = 0;
    std::memcpy(&alignment, encoded.data(), sizeof(alignment));  // Decode checked the size.
    return SetAlignment(alignment);
  }
  if (!keys_.emplace(key).second) {
    return InvalidArgument(fmt::format("metadata key '{}' added twice", key));
  }
  GgufAppendString(&metadata_, key);
  GgufAppendScalar<uint32_t>(&metadata_, static_cast<uint32_t>(type));
  GgufAppendBytes(&metadata_, encoded);
  return Status::Ok();
}

Status GgufWriter::AddEncoded(std::string_view key, GgufValueType type,
                              std::span<const uint8_t> encoded) {
  Result<GgufValue> value = GgufValue::Decode(type, encoded);
  if (!value.ok()) {
    return InvalidArgument(fmt::format("metadata key '{}': {}", key, value.status().message()));
  }
  if (value->encoded_size() != encoded.size()) {
    return InvalidArgument(fmt::format("metadata key '{}': {} trailing bytes after the value", key,
                                       encoded.size() - value->encoded_size()));
  }
  return AppendKv(key, type, encoded);
}

Status GgufWriter::AddValue(std::string_view key, const GgufValue& value) {
  std::vector<uint8_t> encoded;
  switch (value.type()) {
    case GgufValueType::kString:
      GgufAppendScalar<uint64_t>(&encoded, value.size());
      break;
    case GgufValueType::kArray:
      GgufAppendArrayHeader(&encoded, value.element_type(), value.size());
      break;
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
    case GgufValueType::kBool:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      break;  // A scalar's payload is its whole encoding.
  }
  GgufAppendBytes(&encoded, value.payload());
  return AddEncoded(key, value.type(), encoded);
}

template <typename T>
Status GgufWriter::AddScalar(std::string_view key, T value) {
  std::vector<uint8_t> encoded;
  if constexpr (std::is_same_v<T, bool>) {
    encoded.push_back(value ? 1 : 0);
  } else {
    GgufAppendScalar(&encoded, value);
  }
  return AppendKv(key, GgufTypeOf<T>(), encoded);
}

Status GgufWriter::AddU8(std::string_view key, uint8_t value) { return AddScalar(key, value); }
Status GgufWriter::AddI8(std::string_view key, int8_t value) { return AddScalar(key, value); }
Status GgufWriter::AddU16(std::string_view key, uint16_t value) { return AddScalar(key, value); }
Status GgufWriter::AddI16(std::string_view key, int16_t value) { return AddScalar(key, value); }
Status GgufWriter::AddU32(std::string_view key, uint32_t value) { return AddScalar(key, value); }
Status GgufWriter::AddI32(std::string_view key, int32_t value) { return AddScalar(key, value); }
Status GgufWriter::AddU64(std::string_view key, uint64_t value) { return AddScalar(key, value); }
Status GgufWriter::AddI64(std::string_view key, int64_t value) { return AddScalar(key, value); }
Status GgufWriter::AddF32(std::string_view key, float value) { return AddScalar(key, value); }
Status GgufWriter::AddF64(std::string_view key, double value) { return AddScalar(key, value); }
Status GgufWriter::AddBool(std::string_view key, bool value) { return AddScalar(key, value); }

Status GgufWriter::AddString(std::string_view key, std::string_view value) {
  std::vector<uint8_t> encoded;
  GgufAppendString(&encoded, value);
  return AppendKv(key, GgufValueType::kString, encoded);
}

template <typename T>
Status GgufWriter::AddNumericArray(std::string_view key, std::span<const T> values) {
  std::vector<uint8_t> encoded;
  GgufAppendArrayHeader(&encoded, GgufTypeOf<T>(), values.size());
  for (T v : values) GgufAppendScalar(&encoded, v);
  return AppendKv(key, GgufValueType::kArray, encoded);
}

Status GgufWriter::AddArray(std::string_view key, std::span<const uint8_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const int8_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const uint16_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const int16_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const uint32_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const int32_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const uint64_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const int64_t> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const float> values) {
  return AddNumericArray(key, values);
}
Status GgufWriter::AddArray(std::string_view key, std::span<const double> values) {
  return AddNumericArray(key, values);
}

Status GgufWriter::AddBoolArray(std::string_view key, const std::vector<bool>& values) {
  std::vector<uint8_t> encoded;
  GgufAppendArrayHeader(&encoded, GgufValueType::kBool, values.size());
  for (bool v : values) encoded.push_back(v ? 1 : 0);
  return AppendKv(key, GgufValueType::kArray, encoded);
}

Status GgufWriter::AddStringArray(std::string_view key, std::span<const std::string> values) {
  std::vector<std::string_view> views(values.begin(), values.end());
  return AddStringArray(key, std::span<const std::string_view>(views));
}

Status GgufWriter::AddStringArray(std::string_view key, std::span<const std::string_view> values) {
  std::vector<uint8_t> encoded;
  GgufAppendArrayHeader(&encoded, GgufValueType::kString, values.size());
  for (std::string_view v : values) GgufAppendString(&encoded, v);
  return AppendKv(key, GgufValueType::kArray, encoded);
}

Status GgufWriter::AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> dims,
                             GgufTensorFiller filler) {
  std::string context = fmt::format("tensor '{}': ", name);
  if (name.size() > kGgufMaxTensorNameBytes) {
    return InvalidArgument(context + fmt::format("name of {} bytes exceeds the limit of {}",
                                                 name.size(), kGgufMaxTensorNameBytes));
  }
  if (dims.size() > kGgufMaxDims) {
    return InvalidArgument(
        context + fmt::format("{} dims exceed the maximum of {}", dims.size(), kGgufMaxDims));
  }
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 1 || !CheckedMul(elements, d, &elements)) {
      return InvalidArgument(context + "dims must be >= 1 with a product that fits int64");
    }
  }
  Result<uint64_t> bytes = GgmlTensorBytes(type, dims);
  if (!bytes.ok()) return InvalidArgument(context + bytes.status().message());
  if (!filler) return InvalidArgument(context + "no filler");
  if (tensor_names_.count(name) != 0) return InvalidArgument(context + "added twice");
  tensor_names_.emplace(name);
  tensors_.push_back(PendingTensor{std::string(name), type,
                                   std::vector<int64_t>(dims.begin(), dims.end()), *bytes,
                                   std::move(filler)});
  return Status::Ok();
}

Status GgufWriter::AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> dims,
                             std::span<const uint8_t> data) {
  Result<uint64_t> bytes = GgmlTensorBytes(type, dims);
  if (bytes.ok() && *bytes != data.size()) {
    return InvalidArgument(fmt::format("tensor '{}': {} bytes of data given, its shape needs {}",
                                       name, data.size(), *bytes));
  }
  auto owned = std::make_shared<const std::vector<uint8_t>>(data.begin(), data.end());
  return AddTensor(name, type, dims, [owned](GgufSink& sink) { return sink.Write(*owned); });
}

Status GgufWriter::ComputeOffsets(std::vector<uint64_t>* offsets, uint64_t* data_size) const {
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    offsets->push_back(offset);
    uint64_t end = 0;
    if (!CheckedAdd(offset, t.byte_size, &end) || !CheckedAlignUp(end, alignment_, &offset)) {
      return OutOfRange(fmt::format("tensor '{}': data section size overflows 64 bits", t.name));
    }
  }
  *data_size = offset;
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::EncodeHead(std::span<const uint64_t> offsets) const {
  std::vector<uint8_t> out;
  GgufAppendScalar<uint32_t>(&out, kGgufMagic);
  GgufAppendScalar<uint32_t>(&out, kGgufVersion);
  GgufAppendScalar<uint64_t>(&out, tensors_.size());
  GgufAppendScalar<uint64_t>(&out, num_keys());
  if (alignment_key_) {
    GgufAppendString(&out, kGgufAlignmentKey);
    GgufAppendScalar<uint32_t>(&out, static_cast<uint32_t>(GgufValueType::kU32));
    GgufAppendScalar<uint32_t>(&out, alignment_);
  }
  GgufAppendBytes(&out, metadata_);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    GgufAppendString(&out, t.name);
    GgufAppendScalar<uint32_t>(&out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) GgufAppendScalar<uint64_t>(&out, static_cast<uint64_t>(d));
    GgufAppendScalar<uint32_t>(&out, static_cast<uint32_t>(t.type));
    GgufAppendScalar<uint64_t>(&out, offsets[i]);
  }
  // The data section starts aligned. A file without tensors has none, and padding it would
  // write up to alignment - 1 bytes for nothing (2^31 - 1 for the largest legal alignment).
  if (!tensors_.empty()) GgufAppendPadding(&out, alignment_);
  return out;
}

Result<uint64_t> GgufWriter::FileSize() const {
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  KV_RETURN_IF_ERROR(ComputeOffsets(&offsets, &data_size));
  uint64_t total = 0;
  if (!CheckedAdd<uint64_t>(EncodeHead(offsets).size(), data_size, &total)) {
    return OutOfRange("file size overflows 64 bits");
  }
  return total;
}

Status GgufWriter::WriteTo(GgufSink& sink) const {
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  KV_RETURN_IF_ERROR(ComputeOffsets(&offsets, &data_size));
  KV_RETURN_IF_ERROR(sink.Write(EncodeHead(offsets)));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    CountingSink counting(sink, t.name, t.byte_size);
    KV_RETURN_IF_ERROR(t.filler(counting));
    if (counting.written() != t.byte_size) {
      return InvalidArgument(fmt::format("tensor '{}': filler wrote {} of its {} bytes", t.name,
                                         counting.written(), t.byte_size));
    }
    uint64_t next = i + 1 < tensors_.size() ? offsets[i + 1] : data_size;
    KV_RETURN_IF_ERROR(WriteZeros(sink, next - offsets[i] - t.byte_size));
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> GgufWriter::WriteToBytes() const {
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  KV_RETURN_IF_ERROR(WriteTo(sink));
  return out;
}

Status GgufWriter::WriteToFile(const std::string& path) const {
  std::string temp_path = path + ".tmp";
  std::FILE* file = std::fopen(temp_path.c_str(), "wb");
  if (file == nullptr) {
    return InvalidArgument(fmt::format("{}: cannot create: {}", temp_path, std::strerror(errno)));
  }
  // Large sequential writes: a 1 MiB stdio buffer keeps small filler writes cheap.
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  FileSink sink(file, temp_path);
  Status status = WriteTo(sink);
  if (std::fclose(file) != 0 && status.ok()) {
    status = Internal(fmt::format("{}: close failed: {}", temp_path, std::strerror(errno)));
  }
  if (status.ok() && std::rename(temp_path.c_str(), path.c_str()) != 0) {
    status =
        Internal(fmt::format("cannot rename {} to {}: {}", temp_path, path, std::strerror(errno)));
  }
  if (!status.ok()) std::remove(temp_path.c_str());
  return status;
}

}  // namespace kvengine
