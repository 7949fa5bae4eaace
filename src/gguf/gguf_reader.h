// GgufFile: a validated, read-only view of a GGUF (v2 or v3) file, memory-mapped or copied.
//
// File layout (all integers little-endian):
//   u32 magic "GGUF" | u32 version | u64 tensor_count | u64 metadata_kv_count
//   metadata_kv_count x { string key | u32 value type | value }
//   tensor_count x { string name | u32 n_dims | n_dims x u64 dim | u32 ggml type | u64 offset }
//   padding to `general.alignment` (default 32)
//   data section: each tensor's bytes at data_start + offset, offsets aligned
// where a string is a u64 byte length followed by the bytes.
//
// The file is hostile until Open/FromBytes return: every count, length, offset and shape is
// checked with overflow-safe arithmetic against the bytes present before anything is allocated,
// and a malformed file yields a Status naming what is wrong and where. Once open, every accessor
// reads inside validated bounds.
//
// Ownership and threads: GgufFile owns the mapping (or copy); every string_view, span and
// GgufValue it hands out points into it and is valid while the GgufFile lives. It is immutable
// after opening, so any thread may call its const methods concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_value.h"

namespace kvengine {

struct GgufKv {
  std::string_view key;  // Unique within the file.
  GgufValue value;
};

struct GgufTensor {
  std::string_view name;  // Unique within the file, at most kGgufMaxTensorNameBytes bytes.
  GgmlType type;
  uint32_t n_dims;  // 0..kGgufMaxDims as stored (0 = a scalar).
  // ggml order: dims[0] is the contiguous row (ggml's ne[0]); dims[i] = 1 for i >= n_dims.
  // Every dim is >= 1, dims[0] is a multiple of the type's block size.
  std::array<int64_t, kGgufMaxDims> dims;
  int64_t n_elements;  // Product of dims, fits int64.
  uint64_t offset;     // From the start of the data section; a multiple of the alignment.
  uint64_t byte_size;  // GgmlTensorBytes(type, shape()); data.size() == byte_size.
  std::span<const uint8_t> data;  // Inside the data section, overlapping no other tensor.
  // The layout of `data`: 0, the file's (ggml rows); B > 0, column blocks of width B
  // (gguf_layout.h), which a loader asked for through GgufLoadOptions. Only 2-D tensors of the
  // types of ColumnBlockType (gguf_layout.h) in an owned copy are ever stored so.
  int64_t column_block = 0;

  std::span<const int64_t> shape() const { return {dims.data(), n_dims}; }
};

// What a loader asks of the in-memory copy of a file (Open with LoadMode::kRead, FromBytes). A
// mapping (LoadMode::kMap) is read-only and keeps the file's layout whatever is asked.
struct GgufLoadOptions {
  // For each tensor, the column block width to store it in (gguf_layout.h), or 0 for the file's
  // layout; unset: every tensor as in the file. A width >= the tensor's columns is the file's
  // layout as well. Any other width > 0 must be asked only of a 2-D tensor of a ColumnBlockType
  // type, in a multiple of its ColumnBlockAlign (gguf_layout.h): for another, loading fails naming
  // it.
  std::function<int64_t(const GgufTensor&)> column_block;
};

// Parsed contents, shared by GgufFile and the parser (gguf_parse.h).
struct GgufContents {
  uint32_t version = 0;
  uint32_t alignment = kGgufDefaultAlignment;
  uint64_t data_offset = 0;         // File offset of the data section (aligned).
  uint64_t data_size = 0;           // Bytes from data_offset to the end of the file.
  std::vector<GgufKv> kvs;          // In file order.
  std::vector<GgufTensor> tensors;  // In file order.
  // key -> index in kvs, name -> index in tensors. Ordered maps, not hash maps, so that a
  // hostile file cannot make loading quadratic with colliding names.
  std::map<std::string_view, size_t, std::less<>> key_index;
  std::map<std::string_view, size_t, std::less<>> tensor_index;
};

class GgufFile {
 public:
  // kMap maps `path` read-only: instant, shares the page cache, but 4 KiB pages (a file mapping
  // gets no transparent huge pages), so streaming the weights misses the TLB every 4 KiB. kRead
  // reads the file into a 2 MiB-aligned huge-page region (base/huge_pages.h): a copy in private
  // memory that decode streams about twice as fast on the reference machine. llama.cpp's
  // --no-mmap / --mmap choice; `kvengine` reads by default.
  enum class LoadMode { kMap, kRead };

  // Opens `path` (mapped or read, see LoadMode). Errors name the path. (A file truncated by
  // another process while mapped would raise SIGBUS on access; model files are not expected to
  // change under us.)
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path,
                                                LoadMode mode = LoadMode::kMap,
                                                const GgufLoadOptions& options = {});
  // Copies `bytes` into an owned, 64-byte aligned buffer and parses it.
  static Result<std::unique_ptr<GgufFile>> FromBytes(std::span<const uint8_t> bytes,
                                                     const GgufLoadOptions& options = {});

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return contents_.version; }
  uint32_t alignment() const { return contents_.alignment; }
  uint64_t data_offset() const { return contents_.data_offset; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata, in file order.
  const std::vector<GgufKv>& metadata() const { return contents_.kvs; }
  bool Has(std::string_view key) const;
  // nullptr when absent.
  const GgufValue* Find(std::string_view key) const;
  // NotFound when absent.
  Result<GgufValue> Get(std::string_view key) const;

  // Exactly-typed getters: NotFound when absent, InvalidArgument naming the key and both types
  // when the stored type differs. Strings are views into the file.
  Result<uint8_t> GetU8(std::string_view key) const;
  Result<int8_t> GetI8(std::string_view key) const;
  Result<uint16_t> GetU16(std::string_view key) const;
  Result<int16_t> GetI16(std::string_view key) const;
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<int32_t> GetI32(std::string_view key) const;
  Result<uint64_t> GetU64(std::string_view key) const;
  Result<int64_t> GetI64(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;
  Result<double> GetF64(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string_view> GetString(std::string_view key) const;
  // Any integer type widened to int64_t (u64 above INT64_MAX is an error).
  Result<int64_t> GetInt(std::string_view key) const;
  // f32 or f64 as double.
  Result<double> GetFloat(std::string_view key) const;
  // Arrays: of strings; of any integer type, widened; of f32.
  Result<std::vector<std::string_view>> GetStringArray(std::string_view key) const;
  Result<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  Result<std::vector<float>> GetF32Array(std::string_view key) const;
  // `general.architecture` ("llama", "qwen2", ...).
  Result<std::string_view> Architecture() const;

  // Tensors, in file order.
  const std::vector<GgufTensor>& tensors() const { return contents_.tensors; }
  // nullptr when absent.
  const GgufTensor* FindTensor(std::string_view name) const;

 private:
  // Releases the mapping or the copy.
  struct Storage;
  GgufFile(std::unique_ptr<Storage> storage, GgufContents contents);
  // Parses `storage`; for an owned copy, stores the tensors in the layouts `options` asks for.
  static Result<std::unique_ptr<GgufFile>> Parse(std::unique_ptr<Storage> storage,
                                                 const GgufLoadOptions& options);
  template <typename T>
  Result<T> GetAs(std::string_view key) const;

  std::unique_ptr<Storage> storage_;
  std::span<const uint8_t> bytes_;  // The whole file, owned by storage_.
  GgufContents contents_;           // Views point into bytes_.
};

}  // namespace kvengine
