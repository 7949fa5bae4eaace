// GgufWriter: builds a GGUF v3 file. Metadata is encoded as it is added; tensors are declared
// with a shape and a filler that produces their bytes at write time, so a multi-gigabyte
// synthetic model streams to disk without being held in memory.
//
// Layout written (see gguf_reader.h for the format):
//   header | `general.alignment` (u32, first, only if SetAlignment was called) | metadata in the
//   order added | tensor infos in the order added | zero padding to the alignment (only when
//   there are tensors) | each tensor's bytes followed by zero padding to the alignment.
// Tensor offsets are therefore: offset[0] = 0, offset[i+1] = AlignUp(offset[i] + bytes[i]).
//
// Every Add* validates its input (unique keys and names, key and name lengths, shapes, types,
// sizes) so that the writer cannot produce a file the reader rejects.
//
// Ownership and threads: a plain value object for one thread. Write* may be called more than
// once if the fillers can produce their bytes again.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_value.h"

namespace kvengine {

// Where the file's bytes go, front to back.
class GgufSink {
 public:
  virtual ~GgufSink() = default;
  virtual Status Write(std::span<const uint8_t> bytes) = 0;
};

// Produces one tensor's bytes into `sink`, in any number of Write calls that add up to exactly
// the tensor's byte size.
using GgufTensorFiller = std::function<Status(GgufSink& sink)>;

class GgufWriter {
 public:
  GgufWriter() = default;

  // Data alignment, a non-zero power of two; also written as `general.alignment`. Default 32
  // (and no key). Adding a u32 `general.alignment` through Add* or AddValue calls this.
  Status SetAlignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // Scalars and strings. Each key may be added once.
  Status AddU8(std::string_view key, uint8_t value);
  Status AddI8(std::string_view key, int8_t value);
  Status AddU16(std::string_view key, uint16_t value);
  Status AddI16(std::string_view key, int16_t value);
  Status AddU32(std::string_view key, uint32_t value);
  Status AddI32(std::string_view key, int32_t value);
  Status AddU64(std::string_view key, uint64_t value);
  Status AddI64(std::string_view key, int64_t value);
  Status AddF32(std::string_view key, float value);
  Status AddF64(std::string_view key, double value);
  Status AddBool(std::string_view key, bool value);
  Status AddString(std::string_view key, std::string_view value);

  // Arrays of scalars and strings.
  Status AddArray(std::string_view key, std::span<const uint8_t> values);
  Status AddArray(std::string_view key, std::span<const int8_t> values);
  Status AddArray(std::string_view key, std::span<const uint16_t> values);
  Status AddArray(std::string_view key, std::span<const int16_t> values);
  Status AddArray(std::string_view key, std::span<const uint32_t> values);
  Status AddArray(std::string_view key, std::span<const int32_t> values);
  Status AddArray(std::string_view key, std::span<const uint64_t> values);
  Status AddArray(std::string_view key, std::span<const int64_t> values);
  Status AddArray(std::string_view key, std::span<const float> values);
  Status AddArray(std::string_view key, std::span<const double> values);
  Status AddBoolArray(std::string_view key, const std::vector<bool>& values);
  Status AddStringArray(std::string_view key, std::span<const std::string> values);
  Status AddStringArray(std::string_view key, std::span<const std::string_view> values);

  // A value decoded from another file (copies metadata across, nested arrays included).
  Status AddValue(std::string_view key, const GgufValue& value);
  // A value of `type` given as its encoding (for a string: u64 length + bytes; for an array:
  // u32 element type, u64 count, elements). Checked with GgufValue::Decode, which must consume
  // all of `encoded`. Arrays of arrays are built this way with gguf_encoding.h.
  Status AddEncoded(std::string_view key, GgufValueType type, std::span<const uint8_t> encoded);

  // Declares a tensor of `dims` (ggml order, dims[0] contiguous; 0..4 dims, each >= 1, dims[0]
  // a whole number of blocks) whose bytes `filler` produces at write time.
  Status AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> dims,
                   GgufTensorFiller filler);
  // A tensor whose bytes are given now (copied); data.size() must equal its byte size.
  Status AddTensor(std::string_view name, GgmlType type, std::span<const int64_t> dims,
                   std::span<const uint8_t> data);

  size_t num_keys() const { return keys_.size() + (alignment_key_ ? 1 : 0); }
  size_t num_tensors() const { return tensors_.size(); }
  // Bytes the written file takes (an error if that overflows 64 bits).
  Result<uint64_t> FileSize() const;

  // Writes the whole file to `sink`.
  Status WriteTo(GgufSink& sink) const;
  // Writes `path` through a temporary file beside it, renamed into place on success.
  Status WriteToFile(const std::string& path) const;
  Result<std::vector<uint8_t>> WriteToBytes() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    uint64_t byte_size;
    GgufTensorFiller filler;
  };

  // Checks `key` (length, uniqueness) and appends key, type and `encoded` value to metadata_.
  Status AppendKv(std::string_view key, GgufValueType type, std::span<const uint8_t> encoded);
  template <typename T>
  Status AddScalar(std::string_view key, T value);
  template <typename T>
  Status AddNumericArray(std::string_view key, std::span<const T> values);
  // Each tensor's offset in the data section (offset[i+1] = AlignUp(offset[i] + bytes[i])) and
  // the data section's size, padding after the last tensor included.
  Status ComputeOffsets(std::vector<uint64_t>* offsets, uint64_t* data_size) const;
  // The header, metadata and tensor infos at `offsets`, padded to the alignment.
  std::vector<uint8_t> EncodeHead(std::span<const uint64_t> offsets) const;

  uint32_t alignment_ = kGgufDefaultAlignment;
  bool alignment_key_ = false;               // Write `general.alignment`.
  std::set<std::string, std::less<>> keys_;  // Added keys, `general.alignment` excluded.
  std::vector<uint8_t> metadata_;            // Encoded key/value entries, in the order added.
  std::set<std::string, std::less<>> tensor_names_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace kvengine
