// Little-endian encoding of GGUF fields into a byte vector: the writer's building blocks, also
// used by tests to build deliberately malformed files field by field.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gguf/gguf_types.h"

namespace kvengine {

static_assert(std::endian::native == std::endian::little, "GGUF writing assumes little-endian");

// Appends a trivially copyable value's bytes (an integer, float or double: little-endian).
template <typename T>
void GgufAppendScalar(std::vector<uint8_t>* out, T value) {
  static_assert(std::is_arithmetic_v<T>);
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  // Byte by byte: GCC 12 reports false -Wstringop-overflow / -Warray-bounds on a vector insert or
  // resize + memcpy of a few bytes once inlined.
  for (uint8_t b : bytes) out->push_back(b);
}

inline void GgufAppendBytes(std::vector<uint8_t>* out, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  size_t at = out->size();
  out->resize(at + bytes.size());
  std::memcpy(out->data() + at, bytes.data(), bytes.size());
}

// A GGUF string: u64 byte length, then the bytes.
inline void GgufAppendString(std::vector<uint8_t>* out, std::string_view text) {
  GgufAppendScalar<uint64_t>(out, text.size());
  GgufAppendBytes(
      out, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// The framing in front of an array's elements: u32 element type, u64 element count.
inline void GgufAppendArrayHeader(std::vector<uint8_t>* out, GgufValueType element_type,
                                  uint64_t count) {
  GgufAppendScalar<uint32_t>(out, static_cast<uint32_t>(element_type));
  GgufAppendScalar<uint64_t>(out, count);
}

// Zero bytes up to the next multiple of `alignment` (a power of two) of out->size().
inline void GgufAppendPadding(std::vector<uint8_t>* out, uint64_t alignment) {
  out->resize((out->size() + alignment - 1) & ~(alignment - 1), 0);
}

}  // namespace kvengine
