// GgufValue: a view of one decoded GGUF metadata value. It points into bytes owned by someone else
// (a GgufFile, a writer's buffer) and is valid only while they live. Values are created only by
// Decode, which validates the whole encoding (lengths, element counts, bool bytes, nesting), so
// every accessor reads inside the view.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_types.h"

namespace kvengine {

class GgufValue {
 public:
  // Decodes one value of `type` from the front of `bytes`. `base_offset` is the file position of
  // bytes[0] (for messages); `depth` is the number of arrays enclosing this value (0 for a key's
  // value). Checks every length and count against the bytes present before looking further,
  // rejects bool bytes other than 0/1 and arrays nested deeper than kGgufMaxArrayDepth.
  static Result<GgufValue> Decode(GgufValueType type, std::span<const uint8_t> bytes,
                                  uint64_t base_offset = 0, int depth = 0);

  GgufValueType type() const { return type_; }
  // Arrays: the type of the elements. Other values: their own type.
  GgufValueType element_type() const { return element_type_; }
  // Arrays: the element count. Strings: the byte length. Scalars: 1.
  uint64_t size() const { return count_; }
  // The value's bytes without framing: a scalar's little-endian bytes, a string's characters, an
  // array's elements back to back (without its u32 type and u64 count).
  std::span<const uint8_t> payload() const { return payload_; }
  // Bytes the value takes in its encoding, framing included (what Decode consumed).
  uint64_t encoded_size() const { return encoded_size_; }
  // File position of the value's first byte (its framing, if any).
  uint64_t offset() const { return offset_; }

  // The value as exactly its own type: T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t,
  // int32_t, uint64_t, int64_t, float, double, bool, std::string_view. A different type is an
  // error naming both ("is u32, not i32").
  template <typename T>
  Result<T> As() const;
  // Any integer type as int64_t (writers differ in u32/i32/u64); a u64 above INT64_MAX is an
  // error.
  Result<int64_t> AsInt() const;
  // f32 or f64 as double.
  Result<double> AsFloat() const;

  // Arrays: each element as a value (strings and arrays are views, scalars slices of payload()).
  Result<std::vector<GgufValue>> Elements() const;
  // Arrays of strings, of any integer type, or of f32 (copied out, so alignment does not matter).
  Result<std::vector<std::string_view>> AsStringArray() const;
  Result<std::vector<int64_t>> AsIntArray() const;
  Result<std::vector<float>> AsF32Array() const;

  // For humans: `42`, `"llama"`, `[1, 2, 3, ... (512 x i32)]`. Strings longer than 64 bytes and
  // arrays longer than `max_elements` are shortened; bytes outside printable ASCII (and ' \)
  // show as \xNN.
  std::string ToString(size_t max_elements = 8) const;

 private:
  GgufValue(GgufValueType type, GgufValueType element_type, uint64_t count,
            std::span<const uint8_t> payload, uint64_t encoded_size, uint64_t offset, int depth)
      : type_(type),
        element_type_(element_type),
        count_(count),
        payload_(payload),
        encoded_size_(encoded_size),
        offset_(offset),
        depth_(depth) {}

  // `what` is the C++ type the caller asked for; the message names both types.
  Status WrongType(const char* what) const;

  GgufValueType type_;
  GgufValueType element_type_;
  uint64_t count_;
  std::span<const uint8_t> payload_;
  uint64_t encoded_size_;
  uint64_t offset_;
  int depth_;  // Arrays enclosing this value; its elements decode at depth_ + 1.
};

}  // namespace kvengine
