#include "tier/block_record.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack instead of XXH3_createState().
#include <xxhash.h>

#include "base/check.h"

namespace kvengine {
namespace {

constexpr uint8_t kMagic[4] = {'K', 'V', 'T', 'B'};
// Field offsets (see the layout in the header).
constexpr size_t kVersionAt = 4;
constexpr size_t kNamespaceAt = 8;
constexpr size_t kHashAt = 40;
constexpr size_t kGroupAt = 72;
constexpr size_t kFormatAt = 76;
constexpr size_t kPayloadBytesAt = 80;
constexpr size_t kChecksumAt = 88;
static_assert(kChecksumAt + 8 == kRecordHeaderBytes);

template <typename T>
void PutLe(uint8_t* at, T v) {
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(U); ++i) at[i] = static_cast<uint8_t>(u >> (8 * i));
}

template <typename T>
T GetLe(const uint8_t* at) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(U); ++i) u = static_cast<U>(u | U(at[i]) << (8 * i));
  return static_cast<T>(u);
}

// XXH3-64 of the header up to the checksum field, then the payload.
uint64_t Checksum(const uint8_t* header, std::span<const uint8_t> payload) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, kChecksumAt);
  if (!payload.empty()) XXH3_64bits_update(&state, payload.data(), payload.size());
  return XXH3_64bits_digest(&state);
}

}  // namespace

void EncodeRecordInto(const RecordMeta& meta, std::span<const uint8_t> payload,
                      std::vector<uint8_t>* out) {
  KV_CHECK(meta.payload_bytes == payload.size())
      << "payload_bytes " << meta.payload_bytes << " != payload size " << payload.size();
  out->resize(kRecordHeaderBytes + payload.size());
  uint8_t* h = out->data();
  std::memcpy(h, kMagic, sizeof(kMagic));
  PutLe<uint32_t>(h + kVersionAt, kRecordVersion);
  std::memcpy(h + kNamespaceAt, meta.namespace_digest.data(), 32);
  std::memcpy(h + kHashAt, meta.hash.bytes.data(), 32);
  PutLe<int32_t>(h + kGroupAt, meta.group);
  PutLe<uint32_t>(h + kFormatAt, meta.payload_format);
  PutLe<uint64_t>(h + kPayloadBytesAt, meta.payload_bytes);
  PutLe<uint64_t>(h + kChecksumAt, Checksum(h, payload));
  if (!payload.empty()) std::memcpy(h + kRecordHeaderBytes, payload.data(), payload.size());
}

std::vector<uint8_t> EncodeRecord(const RecordMeta& meta, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out;
  EncodeRecordInto(meta, payload, &out);
  return out;
}

std::string_view RecordCheckName(RecordCheck check) {
  switch (check) {
    case RecordCheck::kOk:
      return "ok";
    case RecordCheck::kTruncated:
      return "truncated";
    case RecordCheck::kBadMagic:
      return "bad_magic";
    case RecordCheck::kBadVersion:
      return "bad_version";
    case RecordCheck::kCorrupt:
      return "corrupt";
    case RecordCheck::kForeign:
      return "foreign";
  }
  return "unknown";
}

RecordCheck CheckRecordIntegrity(std::span<const uint8_t> record, RecordMeta* meta,
                                 std::span<const uint8_t>* payload, bool verify_checksum) {
  const size_t size = record.size();
  const uint8_t* r = record.data();
  // A prefix of the magic is a truncated record, anything else is not a record.
  if (size > 0 && std::memcmp(r, kMagic, std::min(size, sizeof(kMagic))) != 0) {
    return RecordCheck::kBadMagic;
  }
  if (size >= kVersionAt + 4 && GetLe<uint32_t>(r + kVersionAt) != kRecordVersion) {
    return RecordCheck::kBadVersion;
  }
  if (size < kRecordHeaderBytes) return RecordCheck::kTruncated;
  // Bounded by the bytes present: `available` cannot underflow, and payload_bytes (hostile, up
  // to 2^64-1) is only compared, never added to anything.
  const uint64_t payload_bytes = GetLe<uint64_t>(r + kPayloadBytesAt);
  const uint64_t available = size - kRecordHeaderBytes;
  if (payload_bytes > available) return RecordCheck::kTruncated;
  if (payload_bytes < available) return RecordCheck::kCorrupt;
  std::span<const uint8_t> body = record.subspan(kRecordHeaderBytes);
  if (verify_checksum && GetLe<uint64_t>(r + kChecksumAt) != Checksum(r, body)) {
    return RecordCheck::kCorrupt;
  }
  if (meta != nullptr) {
    std::memcpy(meta->namespace_digest.data(), r + kNamespaceAt, 32);
    std::memcpy(meta->hash.bytes.data(), r + kHashAt, 32);
    meta->group = GetLe<int32_t>(r + kGroupAt);
    meta->payload_format = GetLe<uint32_t>(r + kFormatAt);
    meta->payload_bytes = payload_bytes;
  }
  if (payload != nullptr) *payload = body;
  return RecordCheck::kOk;
}

RecordCheck CheckRecord(std::span<const uint8_t> record, const RecordMeta& expected,
                        std::span<const uint8_t>* payload, bool verify_checksum) {
  RecordMeta meta;
  std::span<const uint8_t> body;
  RecordCheck check = CheckRecordIntegrity(record, &meta, &body, verify_checksum);
  if (check != RecordCheck::kOk) return check;
  if (!(meta == expected)) return RecordCheck::kForeign;
  if (payload != nullptr) *payload = body;
  return RecordCheck::kOk;
}

}  // namespace kvengine
