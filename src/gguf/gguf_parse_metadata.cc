// The file header and the metadata key/value section.
#include <bit>
#include <string>

#include <fmt/format.h>

#include "base/checked_math.h"
#include "gguf/gguf_parse.h"

namespace kvengine::gguf_internal {
namespace {

// Versions this reader accepts. Version 1 (2023) used u32 counts and lengths; nothing writes it.
constexpr uint32_t kMinVersion = 2;
constexpr uint32_t kMaxVersion = 3;

Status CheckMagic(ByteReader& reader) {
  uint32_t magic = 0;
  KV_RETURN_IF_ERROR(reader.Read(&magic, "magic"));
  if (magic != kGgufMagic) {
    std::string_view as_text(reinterpret_cast<const char*>(&magic), sizeof(magic));
    return Corrupt(fmt::format("not a GGUF file: magic is '{}' (0x{:08x}), expected 'GGUF'",
                               Printable(as_text), magic));
  }
  return Status::Ok();
}

Status CheckVersion(ByteReader& reader, uint32_t* version) {
  KV_RETURN_IF_ERROR(reader.Read(version, "version"));
  if (*version >= kMinVersion && *version <= kMaxVersion) return Status::Ok();
  uint32_t swapped = __builtin_bswap32(*version);
  if (swapped >= kMinVersion && swapped <= kMaxVersion) {
    return Corrupt(
        fmt::format("GGUF version field is {} (= {} byte-swapped): big-endian GGUF "
                    "files are not supported",
                    *version, swapped));
  }
  return Corrupt(fmt::format("unsupported GGUF version {} (supported: {} and {})", *version,
                             kMinVersion, kMaxVersion));
}

// Bounds the two counts by the bytes left after the header, so that a count of 2^60 fails here
// instead of reaching a reserve().
Status CheckCounts(const ByteReader& reader, uint64_t tensor_count, uint64_t kv_count) {
  uint64_t left = reader.remaining();
  if (kv_count > left / kMinKvBytes) {
    return Corrupt(
        fmt::format("metadata key count {} cannot fit in the {} bytes left after the "
                    "header (each key takes at least {} bytes)",
                    kv_count, left, kMinKvBytes));
  }
  if (tensor_count > left / kMinTensorInfoBytes) {
    return Corrupt(
        fmt::format("tensor count {} cannot fit in the {} bytes left after the header "
                    "(each tensor info takes at least {} bytes)",
                    tensor_count, left, kMinTensorInfoBytes));
  }
  // Both products are now below 2^64 (each is at most `left`), so their sum cannot overflow.
  if (kv_count * kMinKvBytes + tensor_count * kMinTensorInfoBytes > left) {
    return Corrupt(
        fmt::format("{} metadata keys and {} tensor infos cannot fit in the {} bytes "
                    "left after the header",
                    kv_count, tensor_count, left));
  }
  return Status::Ok();
}

// `general.alignment` must be a u32 that is a non-zero power of two.
Status ReadAlignment(const GgufValue& value, uint32_t* alignment) {
  Result<uint32_t> v = value.As<uint32_t>();
  if (!v.ok()) {
    return Corrupt(fmt::format("{} must be a u32, not {}", kGgufAlignmentKey,
                               GgufValueTypeName(value.type())));
  }
  if (*v == 0 || !std::has_single_bit(*v)) {
    return Corrupt(fmt::format("{} is {}, must be a non-zero power of two", kGgufAlignmentKey, *v));
  }
  *alignment = *v;
  return Status::Ok();
}

}  // namespace

Status CheckGgufPrefix(std::span<const uint8_t> prefix) {
  ByteReader reader(prefix);
  uint32_t version = 0;
  KV_RETURN_IF_ERROR(CheckMagic(reader));
  return CheckVersion(reader, &version);
}

Result<GgufContents> ParseGguf(std::span<const uint8_t> file) {
  ByteReader reader(file);
  GgufContents contents;
  KV_RETURN_IF_ERROR(CheckMagic(reader));
  KV_RETURN_IF_ERROR(CheckVersion(reader, &contents.version));
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  KV_RETURN_IF_ERROR(reader.Read(&tensor_count, "tensor count"));
  KV_RETURN_IF_ERROR(reader.Read(&kv_count, "metadata key count"));
  KV_RETURN_IF_ERROR(CheckCounts(reader, tensor_count, kv_count));

  KV_RETURN_IF_ERROR(ParseMetadata(reader, kv_count, &contents));
  if (tensor_count > reader.remaining() / kMinTensorInfoBytes) {
    return Corrupt(
        fmt::format("tensor count {} cannot fit in the {} bytes left after the "
                    "metadata at byte {}",
                    tensor_count, reader.remaining(), reader.position()));
  }
  KV_RETURN_IF_ERROR(ParseTensorInfos(reader, tensor_count, &contents));
  KV_RETURN_IF_ERROR(PlaceTensorData(file, reader.position(), &contents));
  return contents;
}

Status ParseMetadata(ByteReader& reader, uint64_t kv_count, GgufContents* out) {
  // CheckCounts bounded kv_count by the bytes present, so this reserve is at most file-sized.
  out->kvs.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    uint64_t start = reader.position();
    std::string_view key;
    KV_RETURN_IF_ERROR(
        reader.ReadString(&key, fmt::format("metadata key {} name", i), kGgufMaxKeyBytes));
    std::string context =
        fmt::format("metadata key {} '{}' at byte {}: ", i, Printable(key), start);

    uint32_t type_id = 0;
    KV_RETURN_IF_ERROR(WithContext(reader.Read(&type_id, "value type"), context));
    Result<GgufValueType> type = GgufValueTypeFromId(type_id);
    if (!type.ok()) return WithContext(type.status(), context);
    Result<GgufValue> value = GgufValue::Decode(*type, reader.rest(), reader.position());
    if (!value.ok()) return WithContext(value.status(), context);
    KV_RETURN_IF_ERROR(WithContext(reader.Skip(value->encoded_size(), "value"), context));

    auto [it, inserted] = out->key_index.emplace(key, out->kvs.size());
    if (!inserted) {
      return Corrupt(context +
                     fmt::format("duplicate key (first defined as metadata key {})", it->second));
    }
    if (key == kGgufAlignmentKey) {
      KV_RETURN_IF_ERROR(WithContext(ReadAlignment(*value, &out->alignment), context));
    }
    out->kvs.push_back(GgufKv{key, *value});
  }
  return Status::Ok();
}

}  // namespace kvengine::gguf_internal
