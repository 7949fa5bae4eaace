#include "gguf/gguf_types.h"

#include "base/strings.h"

#include <array>
#include <cctype>

#include <fmt/format.h>

#include "base/checked_math.h"

namespace kvengine {
namespace {

// Every known type, for id and name lookups. Keep in step with GgmlType.
constexpr std::array kAllGgmlTypes = {
    GgmlType::kF32,    GgmlType::kF16,     GgmlType::kQ4_0,  GgmlType::kQ4_1,   GgmlType::kQ5_0,
    GgmlType::kQ5_1,   GgmlType::kQ8_0,    GgmlType::kQ8_1,  GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ4_K,   GgmlType::kQ5_K,    GgmlType::kQ6_K,  GgmlType::kQ8_K,   GgmlType::kIQ2_XXS,
    GgmlType::kIQ2_XS, GgmlType::kIQ3_XXS, GgmlType::kIQ1_S, GgmlType::kIQ4_NL, GgmlType::kIQ3_S,
    GgmlType::kIQ2_S,  GgmlType::kIQ4_XS,  GgmlType::kI8,    GgmlType::kI16,    GgmlType::kI32,
    GgmlType::kI64,    GgmlType::kF64,     GgmlType::kIQ1_M, GgmlType::kBF16,   GgmlType::kTQ1_0,
    GgmlType::kTQ2_0,  GgmlType::kMXFP4,
};

constexpr uint32_t kQK = 32;  // Elements per block of the 32-element formats (QK4_0, QK8_0, ...).
constexpr uint32_t kQK_K = 256;  // Elements per super-block of the k-quants and most i-quants.

}  // namespace

GgmlTypeTraits GetGgmlTypeTraits(GgmlType type) {
  // Bytes per block follow the block structs of ggml-common.h; the layout of each block is the
  // concern of the quant/ codecs, only its size matters here.
  switch (type) {
    case GgmlType::kF32:
      return {"f32", 1, 4};
    case GgmlType::kF16:
      return {"f16", 1, 2};
    case GgmlType::kQ4_0:
      return {"q4_0", kQK, 18};  // f16 d, 16 B nibbles.
    case GgmlType::kQ4_1:
      return {"q4_1", kQK, 20};  // f16 d, f16 m, 16 B nibbles.
    case GgmlType::kQ5_0:
      return {"q5_0", kQK, 22};  // f16 d, 4 B high bits, 16 B nibbles.
    case GgmlType::kQ5_1:
      return {"q5_1", kQK, 24};  // f16 d, f16 m, 4 B high bits, 16 B.
    case GgmlType::kQ8_0:
      return {"q8_0", kQK, 34};  // f16 d, 32 x i8.
    case GgmlType::kQ8_1:
      return {"q8_1", kQK, 36};  // f16 d, f16 s, 32 x i8.
    case GgmlType::kQ2_K:
      return {"q2_K", kQK_K, 84};  // 16 B scales, 64 B quants, 2 x f16.
    case GgmlType::kQ3_K:
      return {"q3_K", kQK_K, 110};  // 32 B hmask, 64 B, 12 B scales, f16.
    case GgmlType::kQ4_K:
      return {"q4_K", kQK_K, 144};  // 2 x f16, 12 B scales, 128 B.
    case GgmlType::kQ5_K:
      return {"q5_K", kQK_K, 176};  // 2 x f16, 12 B scales, 32 B qh, 128 B.
    case GgmlType::kQ6_K:
      return {"q6_K", kQK_K, 210};  // 128 B ql, 64 B qh, 16 B scales, f16.
    case GgmlType::kQ8_K:
      return {"q8_K", kQK_K, 292};  // f32 d, 256 x i8, 16 x i16 sums.
    case GgmlType::kIQ2_XXS:
      return {"iq2_xxs", kQK_K, 66};
    case GgmlType::kIQ2_XS:
      return {"iq2_xs", kQK_K, 74};
    case GgmlType::kIQ3_XXS:
      return {"iq3_xxs", kQK_K, 98};
    case GgmlType::kIQ1_S:
      return {"iq1_s", kQK_K, 50};
    case GgmlType::kIQ4_NL:
      return {"iq4_nl", kQK, 18};
    case GgmlType::kIQ3_S:
      return {"iq3_s", kQK_K, 110};
    case GgmlType::kIQ2_S:
      return {"iq2_s", kQK_K, 82};
    case GgmlType::kIQ4_XS:
      return {"iq4_xs", kQK_K, 136};
    case GgmlType::kI8:
      return {"i8", 1, 1};
    case GgmlType::kI16:
      return {"i16", 1, 2};
    case GgmlType::kI32:
      return {"i32", 1, 4};
    case GgmlType::kI64:
      return {"i64", 1, 8};
    case GgmlType::kF64:
      return {"f64", 1, 8};
    case GgmlType::kIQ1_M:
      return {"iq1_m", kQK_K, 56};
    case GgmlType::kBF16:
      return {"bf16", 1, 2};
    case GgmlType::kTQ1_0:
      return {"tq1_0", kQK_K, 54};
    case GgmlType::kTQ2_0:
      return {"tq2_0", kQK_K, 66};
    case GgmlType::kMXFP4:
      return {"mxfp4", kQK, 17};  // e8m0 scale, 16 B of e2m1 pairs.
  }
  KV_CHECK(false) << "GgmlType value " << static_cast<uint32_t>(type) << " outside the enum";
  return {"?", 1, 1};
}

Result<GgmlType> GgmlTypeFromId(uint32_t id) {
  for (GgmlType type : kAllGgmlTypes) {
    if (static_cast<uint32_t>(type) == id) return type;
  }
  return Corrupt(fmt::format("unknown ggml tensor type id {}", id));
}

Result<GgmlType> GgmlTypeFromName(std::string_view name) {
  for (GgmlType type : kAllGgmlTypes) {
    if (EqualsIgnoreCase(GgmlTypeName(type), name)) return type;
  }
  return InvalidArgument(fmt::format("unknown ggml tensor type name '{}'", name));
}

Result<uint64_t> GgmlRowBytes(GgmlType type, uint64_t n) {
  GgmlTypeTraits traits = GetGgmlTypeTraits(type);
  if (n % traits.block_size != 0) {
    return Corrupt(fmt::format("row of {} elements is not a whole number of {}-element {} blocks",
                               n, traits.block_size, traits.name));
  }
  uint64_t bytes = 0;
  if (!CheckedMul<uint64_t>(n / traits.block_size, traits.bytes_per_block, &bytes)) {
    return OutOfRange(
        fmt::format("row of {} {} elements overflows a 64-bit byte size", n, traits.name));
  }
  return bytes;
}

Result<uint64_t> GgmlTensorBytes(GgmlType type, std::span<const int64_t> dims) {
  uint64_t row_elements = 1;  // A tensor of no dims is a scalar.
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1) return Corrupt(fmt::format("dim {} is {}, must be >= 1", i, dims[i]));
  }
  if (!dims.empty()) row_elements = static_cast<uint64_t>(dims[0]);
  KV_ASSIGN_OR_RETURN(uint64_t bytes, GgmlRowBytes(type, row_elements));
  for (size_t i = 1; i < dims.size(); ++i) {
    if (!CheckedMul<uint64_t>(bytes, static_cast<uint64_t>(dims[i]), &bytes)) {
      return OutOfRange(fmt::format("byte size overflows 64 bits at dim {}", i));
    }
  }
  return bytes;
}

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
      return "u8";
    case GgufValueType::kI8:
      return "i8";
    case GgufValueType::kU16:
      return "u16";
    case GgufValueType::kI16:
      return "i16";
    case GgufValueType::kU32:
      return "u32";
    case GgufValueType::kI32:
      return "i32";
    case GgufValueType::kF32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "u64";
    case GgufValueType::kI64:
      return "i64";
    case GgufValueType::kF64:
      return "f64";
  }
  KV_CHECK(false) << "GgufValueType value " << static_cast<uint32_t>(type) << " outside the enum";
  return "?";
}

Result<GgufValueType> GgufValueTypeFromId(uint32_t id) {
  // The value type ids are dense: 0 (u8) through 12 (f64).
  if (id > static_cast<uint32_t>(GgufValueType::kF64)) {
    return Corrupt(fmt::format("unknown metadata value type id {}", id));
  }
  return static_cast<GgufValueType>(id);
}

uint32_t GgufValueTypeFixedSize(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

uint32_t GgufValueTypeMinSize(GgufValueType type) {
  if (type == GgufValueType::kString) return 8;
  if (type == GgufValueType::kArray) return 12;
  // A scalar is its fixed size; a value that names no type (fixed size 0) takes 1.
  const uint32_t fixed = GgufValueTypeFixedSize(type);
  return fixed > 0 ? fixed : 1;
}

bool GgufValueTypeIsInteger(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    case GgufValueType::kF32:
    case GgufValueType::kBool:
    case GgufValueType::kString:
    case GgufValueType::kArray:
    case GgufValueType::kF64:
      return false;
  }
  return false;
}

}  // namespace kvengine
