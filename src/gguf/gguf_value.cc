#include "gguf/gguf_value.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/checked_math.h"
#include "gguf/byte_reader.h"

namespace kvengine {
namespace {

using gguf_internal::ByteReader;

// Bytes of framing in front of a payload: a string's u64 length; an array's u32 element type and
// u64 count. Scalars have none.
constexpr uint64_t kStringHeaderBytes = 8;
constexpr uint64_t kArrayHeaderBytes = 12;

template <typename T>
T LoadLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Reads the integer of type `type` at `p` (which holds at least its fixed size) as int64_t.
Result<int64_t> LoadInt(GgufValueType type, const uint8_t* p) {
  switch (type) {
    case GgufValueType::kU8:
      return static_cast<int64_t>(LoadLe<uint8_t>(p));
    case GgufValueType::kI8:
      return static_cast<int64_t>(LoadLe<int8_t>(p));
    case GgufValueType::kU16:
      return static_cast<int64_t>(LoadLe<uint16_t>(p));
    case GgufValueType::kI16:
      return static_cast<int64_t>(LoadLe<int16_t>(p));
    case GgufValueType::kU32:
      return static_cast<int64_t>(LoadLe<uint32_t>(p));
    case GgufValueType::kI32:
      return static_cast<int64_t>(LoadLe<int32_t>(p));
    case GgufValueType::kI64:
      return LoadLe<int64_t>(p);
    case GgufValueType::kU64: {
      uint64_t v = LoadLe<uint64_t>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return OutOfRange(fmt::format("u64 value {} does not fit in int64", v));
      }
      return static_cast<int64_t>(v);
    }
    case GgufValueType::kF32:
    case GgufValueType::kBool:
    case GgufValueType::kString:
    case GgufValueType::kArray:
    case GgufValueType::kF64:
      break;
  }
  return InvalidArgument(fmt::format("{} is not an integer type", GgufValueTypeName(type)));
}

// Checks an array's elements, which start at the reader's position: `count` values of
// `element_type`, each decoded at `depth`. Bounds the count by the bytes left first. `bytes` is
// the whole array (the reader's span), which starts at file position `array_offset`.
Status CheckElements(ByteReader& reader, std::span<const uint8_t> bytes, uint64_t array_offset,
                     GgufValueType element_type, uint64_t count, int depth) {
  uint64_t min_size = GgufValueTypeMinSize(element_type);
  uint64_t min_bytes = 0;
  if (!CheckedMul<uint64_t>(count, min_size, &min_bytes) || min_bytes > reader.remaining()) {
    return Corrupt(fmt::format(
        "array at byte {}: {} elements of type {} need at least {} bytes "
        "each, only {} bytes left",
        array_offset, count, GgufValueTypeName(element_type), min_size, reader.remaining()));
  }
  uint32_t fixed = GgufValueTypeFixedSize(element_type);
  if (fixed != 0 && element_type != GgufValueType::kBool) {
    std::span<const uint8_t> skipped;
    return reader.ReadBytes(min_bytes, &skipped, "array elements");
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t start = reader.consumed();
    Result<GgufValue> element =
        GgufValue::Decode(element_type, bytes.subspan(start), reader.position(), depth);
    if (!element.ok()) {
      return Status(element.status().code(),
                    fmt::format("array element {}: {}", i, element.status().message()));
    }
    std::span<const uint8_t> skipped;
    KV_RETURN_IF_ERROR(reader.ReadBytes(element->encoded_size(), &skipped, "array element"));
  }
  return Status::Ok();
}

}  // namespace

Result<GgufValue> GgufValue::Decode(GgufValueType type, std::span<const uint8_t> bytes,
                                    uint64_t base_offset, int depth) {
  ByteReader reader(bytes, base_offset);
  switch (type) {
    case GgufValueType::kString: {
      std::string_view text;
      KV_RETURN_IF_ERROR(reader.ReadString(&text, "string"));
      std::span<const uint8_t> payload = bytes.subspan(kStringHeaderBytes, text.size());
      return GgufValue(type, type, text.size(), payload, reader.consumed(), base_offset, depth);
    }
    case GgufValueType::kArray: {
      if (depth + 1 > kGgufMaxArrayDepth) {
        return Corrupt(fmt::format("array at byte {} is nested {} deep, the limit is {}",
                                   base_offset, depth + 1, kGgufMaxArrayDepth));
      }
      uint32_t element_id = 0;
      uint64_t count = 0;
      KV_RETURN_IF_ERROR(reader.Read(&element_id, "array element type"));
      Result<GgufValueType> element_type = GgufValueTypeFromId(element_id);
      if (!element_type.ok()) {
        return Corrupt(
            fmt::format("array at byte {}: {}", base_offset, element_type.status().message()));
      }
      KV_RETURN_IF_ERROR(reader.Read(&count, "array element count"));
      KV_RETURN_IF_ERROR(
          CheckElements(reader, bytes, base_offset, *element_type, count, depth + 1));
      std::span<const uint8_t> payload =
          bytes.subspan(kArrayHeaderBytes, reader.consumed() - kArrayHeaderBytes);
      return GgufValue(type, *element_type, count, payload, reader.consumed(), base_offset, depth);
    }
    case GgufValueType::kBool:
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64: {
      std::span<const uint8_t> payload;
      KV_RETURN_IF_ERROR(
          reader.ReadBytes(GgufValueTypeFixedSize(type), &payload, GgufValueTypeName(type)));
      if (type == GgufValueType::kBool && payload[0] > 1) {
        return Corrupt(fmt::format("bool at byte {} is {}, not 0 or 1", base_offset, payload[0]));
      }
      return GgufValue(type, type, 1, payload, reader.consumed(), base_offset, depth);
    }
  }
  return Corrupt(fmt::format("value at byte {} has type id {} outside the enum", base_offset,
                             static_cast<uint32_t>(type)));
}

Status GgufValue::WrongType(const char* what) const {
  return InvalidArgument(fmt::format("value is {}, not {}", GgufValueTypeName(type_), what));
}

template <typename T>
Result<T> GgufValue::As() const {
  constexpr GgufValueType kWanted = GgufTypeOf<T>();
  if (type_ != kWanted) return WrongType(GgufValueTypeName(kWanted));
  if constexpr (std::is_same_v<T, std::string_view>) {
    return std::string_view(reinterpret_cast<const char*>(payload_.data()), payload_.size());
  } else if constexpr (std::is_same_v<T, bool>) {
    return payload_.size() == 1 && payload_[0] != 0;
  } else {
    if (payload_.size() != sizeof(T)) return Corrupt("scalar value of the wrong size");
    return LoadLe<T>(payload_.data());
  }
}

template Result<uint8_t> GgufValue::As<uint8_t>() const;
template Result<int8_t> GgufValue::As<int8_t>() const;
template Result<uint16_t> GgufValue::As<uint16_t>() const;
template Result<int16_t> GgufValue::As<int16_t>() const;
template Result<uint32_t> GgufValue::As<uint32_t>() const;
template Result<int32_t> GgufValue::As<int32_t>() const;
template Result<uint64_t> GgufValue::As<uint64_t>() const;
template Result<int64_t> GgufValue::As<int64_t>() const;
template Result<float> GgufValue::As<float>() const;
template Result<double> GgufValue::As<double>() const;
template Result<bool> GgufValue::As<bool>() const;
template Result<std::string_view> GgufValue::As<std::string_view>() const;

Result<int64_t> GgufValue::AsInt() const {
  if (!GgufValueTypeIsInteger(type_)) return WrongType("an integer");
  if (payload_.size() != GgufValueTypeFixedSize(type_)) return Corrupt("integer of the wrong size");
  return LoadInt(type_, payload_.data());
}

Result<double> GgufValue::AsFloat() const {
  if (type_ == GgufValueType::kF32) return static_cast<double>(*As<float>());
  if (type_ == GgufValueType::kF64) return As<double>();
  return WrongType("f32 or f64");
}

Result<std::vector<GgufValue>> GgufValue::Elements() const {
  if (type_ != GgufValueType::kArray) return WrongType("array");
  std::vector<GgufValue> elements;
  // Decode already bounded count_ by the payload's size (each element takes at least one byte).
  elements.reserve(count_);
  uint64_t pos = 0;
  uint64_t payload_offset = offset_ + kArrayHeaderBytes;
  for (uint64_t i = 0; i < count_; ++i) {
    if (pos > payload_.size()) return Corrupt("array payload shorter than its elements");
    KV_ASSIGN_OR_RETURN(GgufValue element, Decode(element_type_, payload_.subspan(pos),
                                                  payload_offset + pos, depth_ + 1));
    pos += element.encoded_size();
    elements.push_back(element);
  }
  return elements;
}

Result<std::vector<std::string_view>> GgufValue::AsStringArray() const {
  if (type_ != GgufValueType::kArray || element_type_ != GgufValueType::kString) {
    return WrongType("array of string");
  }
  KV_ASSIGN_OR_RETURN(std::vector<GgufValue> elements, Elements());
  std::vector<std::string_view> out;
  out.reserve(elements.size());
  for (const GgufValue& e : elements) out.push_back(*e.As<std::string_view>());
  return out;
}

Result<std::vector<int64_t>> GgufValue::AsIntArray() const {
  if (type_ != GgufValueType::kArray || !GgufValueTypeIsInteger(element_type_)) {
    return WrongType("array of integers");
  }
  uint32_t size = GgufValueTypeFixedSize(element_type_);
  uint64_t bytes = 0;
  if (!CheckedMul<uint64_t>(count_, size, &bytes) || bytes != payload_.size()) {
    return Corrupt("integer array payload of the wrong size");
  }
  std::vector<int64_t> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    Result<int64_t> v = LoadInt(element_type_, payload_.data() + i * size);
    if (!v.ok()) {
      return Status(v.status().code(), fmt::format("element {}: {}", i, v.status().message()));
    }
    out.push_back(*v);
  }
  return out;
}

Result<std::vector<float>> GgufValue::AsF32Array() const {
  if (type_ != GgufValueType::kArray || element_type_ != GgufValueType::kF32) {
    return WrongType("array of f32");
  }
  uint64_t bytes = 0;
  if (!CheckedMul<uint64_t>(count_, sizeof(float), &bytes) || bytes != payload_.size()) {
    return Corrupt("f32 array payload of the wrong size");
  }
  std::vector<float> out(count_);
  if (bytes != 0) std::memcpy(out.data(), payload_.data(), bytes);
  return out;
}

std::string GgufValue::ToString(size_t max_elements) const {
  constexpr size_t kMaxStringChars = 64;  // Longer strings are cut, with their length shown.
  switch (type_) {
    case GgufValueType::kString: {
      std::string_view text = *As<std::string_view>();
      // Printable escapes control bytes so that a hostile string cannot inject into logs.
      std::string shown = gguf_internal::Printable(text, kMaxStringChars);
      if (text.size() <= kMaxStringChars) return fmt::format("\"{}\"", shown);
      return fmt::format("\"{}\" ({} bytes)", shown, text.size());
    }
    case GgufValueType::kArray: {
      Result<std::vector<GgufValue>> elements = Elements();
      if (!elements.ok()) return "<" + elements.status().message() + ">";
      std::string out = "[";
      for (size_t i = 0; i < elements->size() && i < max_elements; ++i) {
        if (i > 0) out += ", ";
        out += (*elements)[i].ToString(max_elements);
      }
      if (elements->size() > max_elements) {
        out += fmt::format(", ... ({} x {})", elements->size(), GgufValueTypeName(element_type_));
      }
      return out + "]";
    }
    case GgufValueType::kBool:
      return *As<bool>() ? "true" : "false";
    case GgufValueType::kF32:
    case GgufValueType::kF64:
      return fmt::format("{}", *AsFloat());
    case GgufValueType::kU64:
      return fmt::format("{}", *As<uint64_t>());
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kI64:
      return fmt::format("{}", *AsInt());
  }
  return "?";
}

}  // namespace kvengine
