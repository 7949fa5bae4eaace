// GGUF vocabulary: the ggml tensor element types (with their block layouts) and the metadata value
// types. Ids are the numbers stored in files; they never change once llama.cpp assigns them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "kvengine/status.h"

namespace kvengine {

// ggml tensor element types, numbered as in ggml.h. Ids 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4,
// Q4_0_4_8, Q4_0_8_8) and 36-38 (IQ4_NL_4_4, ...) were removed from ggml and from GGUF files;
// they are unknown here, as in llama.cpp.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// How a type stores elements: `block_size` consecutive elements of a row (along dims[0]) are
// packed into `bytes_per_block` bytes. Plain types have block_size 1.
struct GgmlTypeTraits {
  const char* name;          // As ggml spells it: "f32", "q4_K", "iq2_xxs", "bf16".
  uint32_t block_size;       // Elements per block.
  uint32_t bytes_per_block;  // Bytes per block.
};

GgmlTypeTraits GetGgmlTypeTraits(GgmlType type);

// Q8_0's block (ggml's QK8_0), for code that walks its blocks at compile-time sizes (the kernels,
// the synthetic-model encoder); GetGgmlTypeTraits(kQ8_0) gives the same at run time.
inline constexpr int64_t kQ8_0BlockElements = 32;
inline constexpr size_t kQ8_0BlockBytes = 34;  // f16 scale + 32 int8 codes.
inline const char* GgmlTypeName(GgmlType type) { return GetGgmlTypeTraits(type).name; }

// Maps a file's type id to a known type; unknown and removed ids are an error naming the id.
Result<GgmlType> GgmlTypeFromId(uint32_t id);
// Maps a ggml type name ("q8_0", case-insensitive) to its type.
Result<GgmlType> GgmlTypeFromName(std::string_view name);

// Bytes of one row of `n` elements, or an error when `n` is not a multiple of the block size or
// the size overflows.
Result<uint64_t> GgmlRowBytes(GgmlType type, uint64_t n);

// Bytes of a tensor whose dims (ggml order: dims[0] is the contiguous row) are all >= 1;
// an error on a zero dim, a row that is not a whole number of blocks, or overflow.
Result<uint64_t> GgmlTensorBytes(GgmlType type, std::span<const int64_t> dims);

// GGUF metadata value types, numbered as in the GGUF spec.
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,    // One byte, 0 or 1.
  kString = 8,  // u64 byte length, then that many bytes (UTF-8, no terminator).
  kArray = 9,   // u32 element type, u64 element count, then the elements back to back.
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u32", "string", "array", ...
const char* GgufValueTypeName(GgufValueType type);
// Maps a file's value type id to a known type; unknown ids are an error naming the id.
Result<GgufValueType> GgufValueTypeFromId(uint32_t id);
// Encoded size of a fixed-size type (1, 2, 4 or 8), 0 for kString and kArray.
uint32_t GgufValueTypeFixedSize(GgufValueType type);
// The fewest bytes any value of `type` takes in a file: its fixed size, 8 for a string (the
// length), 12 for an array (element type + count). Bounds element counts before allocating.
uint32_t GgufValueTypeMinSize(GgufValueType type);
// True for the eight integer types (not bool).
bool GgufValueTypeIsInteger(GgufValueType type);

// The value type that stores a C++ type: GgufTypeOf<uint32_t>() == GgufValueType::kU32.
template <typename T>
constexpr GgufValueType GgufTypeOf() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return GgufValueType::kU8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufValueType::kI8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufValueType::kU16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufValueType::kI16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufValueType::kU32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufValueType::kI32;
  else if constexpr (std::is_same_v<T, float>)
    return GgufValueType::kF32;
  else if constexpr (std::is_same_v<T, bool>)
    return GgufValueType::kBool;
  else if constexpr (std::is_same_v<T, std::string_view>)
    return GgufValueType::kString;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufValueType::kU64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufValueType::kI64;
  else if constexpr (std::is_same_v<T, double>)
    return GgufValueType::kF64;
  else
    static_assert(sizeof(T) == 0, "no GGUF value type stores this C++ type");
}

// Format limits.
inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32.
inline constexpr uint32_t kGgufVersion = 3;         // The version the writer produces.
inline constexpr uint32_t kGgufMaxDims = 4;         // GGML_MAX_DIMS.
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr std::string_view kGgufAlignmentKey = "general.alignment";
inline constexpr std::string_view kGgufArchitectureKey = "general.architecture";
// Tensor names are at most 63 bytes: ggml stores them NUL-terminated in char[GGML_MAX_NAME = 64].
inline constexpr uint64_t kGgufMaxTensorNameBytes = 63;
// The GGUF spec limits keys to 65535 bytes.
inline constexpr uint64_t kGgufMaxKeyBytes = 65535;
// Arrays may contain arrays, at most this many levels deep (an array of scalars has depth 1).
inline constexpr int kGgufMaxArrayDepth = 4;

}  // namespace kvengine
