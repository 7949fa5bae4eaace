// Test helpers for gguf/: a field-by-field description of a GGUF file (RawFile) that can be
// serialized with any field wrong, and a small valid "base" file that the writer and RawFile
// both produce byte for byte. Corrupt-file tests mutate BaseRawFile() one field at a time, so
// every broken file is "the writer's file with one thing changed".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_encoding.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_writer.h"

namespace kvengine::gguf_test {

struct RawKv {
  std::string key;
  uint32_t type;               // Value type id, written as is.
  std::vector<uint8_t> value;  // The value's encoding, written as is.
};

struct RawTensor {
  std::string name;
  std::vector<uint64_t> dims;      // Written as is.
  std::optional<uint32_t> n_dims;  // Written instead of dims.size() when set.
  uint32_t type;                   // ggml type id.
  uint64_t offset;
};

struct RawFile {
  uint32_t magic = kGgufMagic;
  uint32_t version = kGgufVersion;
  std::optional<uint64_t> tensor_count;  // Written instead of tensors.size() when set.
  std::optional<uint64_t> kv_count;      // Written instead of kvs.size() when set.
  std::vector<RawKv> kvs;
  std::vector<RawTensor> tensors;
  uint64_t padding_alignment = kGgufDefaultAlignment;  // Zero padding after the tensor infos.
  std::vector<uint8_t> data;                           // The data section, written as is.
};

std::vector<uint8_t> Serialize(const RawFile& file);

// Encodings of single values, for RawKv::value.
template <typename T>
std::vector<uint8_t> Encode(T value) {
  std::vector<uint8_t> out;
  GgufAppendScalar(&out, value);
  return out;
}
std::vector<uint8_t> EncodeString(std::string_view text);
// An array of u32 values, with `count` written instead of values.size() when given.
std::vector<uint8_t> EncodeU32Array(const std::vector<uint32_t>& values,
                                    std::optional<uint64_t> count = std::nullopt);
// `depth` arrays nested in each other around one u8 (depth 1 = [7]).
std::vector<uint8_t> EncodeNestedArray(int depth);

// The base file: general.alignment 32, metadata of several types (an architecture string, a
// u32, a string array, a nested array, ...) and three tensors (f32 [4, 3], q8_0 [32, 2],
// f16 [8]) with patterned bytes.
GgufWriter BaseWriter();
RawFile BaseRawFile();
// Where the last tensor's bytes end in the base file (everything after is padding).
uint64_t BaseLastTensorEnd();

// RawFile elements by key / name (the test fails if absent).
RawKv& KvByKey(RawFile& file, std::string_view key);
RawTensor& TensorByName(RawFile& file, std::string_view name);

// Where ../shared/models is: $KVENGINE_MODELS_DIR, else <source dir>/../shared/models.
std::string ModelsDir();

}  // namespace kvengine::gguf_test
