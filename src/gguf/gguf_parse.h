// The GGUF parser, internal to gguf/: ParseGguf validates a whole file in file order, in steps
// that each leave the reader just past what they consumed. See gguf_reader.h for the layout.
#pragma once

#include <cstdint>
#include <span>

#include "kvengine/status.h"
#include "gguf/byte_reader.h"
#include "gguf/gguf_reader.h"

namespace kvengine::gguf_internal {

// The fewest bytes a metadata entry takes: u64 key length (an empty key), u32 value type, and a
// one-byte value. Bounds metadata_kv_count by the bytes present.
inline constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// The fewest bytes a tensor info takes: u64 name length, u32 n_dims (0), u32 type, u64 offset.
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// Parses and validates `file`; views in the result point into `file`.
Result<GgufContents> ParseGguf(std::span<const uint8_t> file);

// The bytes that identify a GGUF file: magic and version.
inline constexpr uint64_t kGgufPrefixBytes = 4 + 4;
// Checks the magic and version at the start of a file (`prefix`: its first kGgufPrefixBytes),
// with ParseGguf's messages: a loader calls it before reading or mapping a whole file.
Status CheckGgufPrefix(std::span<const uint8_t> prefix);

// gguf_parse_metadata.cc: `kv_count` entries into out->kvs / key_index; sets out->alignment
// from `general.alignment` (a u32, non-zero power of two).
Status ParseMetadata(ByteReader& reader, uint64_t kv_count, GgufContents* out);

// gguf_parse_tensors.cc: `tensor_count` tensor infos into out->tensors / tensor_index (shapes,
// types and sizes checked; data not yet placed).
Status ParseTensorInfos(ByteReader& reader, uint64_t tensor_count, GgufContents* out);

// gguf_parse_tensors.cc: finds the data section (the first aligned position at or after
// `infos_end`) and checks each tensor's data is aligned, inside it and overlaps no other; sets
// out->data_offset, data_size and each tensor's data span.
Status PlaceTensorData(std::span<const uint8_t> file, uint64_t infos_end, GgufContents* out);

}  // namespace kvengine::gguf_internal
