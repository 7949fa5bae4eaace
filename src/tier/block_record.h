// The self-describing value the disk and Redis tiers store for one KV block: a fixed header that
// says whose block it is, then the payload. Anything read back from a tier is hostile (a torn
// file, a bit flip, another model's engine sharing the Redis, a stranger writing the key): a
// record is used only when CheckRecord says kOk, and every other outcome is a miss counted by its
// reason.
//
// Layout, every integer little-endian (kRecordHeaderBytes = 96):
//   offset size  field
//        0    4  magic "KVTB"
//        4    4  version (u32, kRecordVersion)
//        8   32  namespace_digest   what the bytes mean: model, KV dtypes, layout, block size
//       40   32  hash               the block's chained prefix hash (TierKey::hash)
//       72    4  group (i32)
//       76    4  payload_format (u32)
//       80    8  payload_bytes (u64): the payload that follows, exactly; nothing after it
//       88    8  checksum (u64): XXH3-64 of bytes [0, 88) followed by the payload
//       96    …  payload
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/sha256.h"
#include "kv/block_hash.h"

namespace kvengine {

inline constexpr uint32_t kRecordVersion = 1;
inline constexpr size_t kRecordHeaderBytes = 96;

// Payload formats. 0 is the pool's own layout, copied byte for byte; other values are reserved
// for re-encoded (compressed) payloads and are foreign to a reader that expects 0.
inline constexpr uint32_t kPayloadRawPool = 0;

struct RecordMeta {
  Digest256 namespace_digest{};
  int32_t group = 0;
  BlockHash hash;
  uint32_t payload_format = kPayloadRawPool;
  uint64_t payload_bytes = 0;  // Length of the payload as stored.

  friend bool operator==(const RecordMeta&, const RecordMeta&) = default;
};

// Header + payload. meta.payload_bytes must equal payload.size() (a caller bug otherwise).
std::vector<uint8_t> EncodeRecord(const RecordMeta& meta, std::span<const uint8_t> payload);
// The same into `out` (resized), so a caller can reuse one buffer for every write.
void EncodeRecordInto(const RecordMeta& meta, std::span<const uint8_t> payload,
                      std::vector<uint8_t>* out);

enum class RecordCheck {
  kOk,
  kTruncated,   // Fewer bytes than the header or its payload_bytes say (a torn write, a prefix).
  kBadMagic,    // Not a record at all.
  kBadVersion,  // A record of a format version this build does not read.
  kCorrupt,     // Checksum mismatch, or bytes after the payload.
  kForeign,     // A sound record of another block: namespace, group, hash, format or size differ.
};

std::string_view RecordCheckName(RecordCheck check);

// Verifies framing and checksum only, and reads the header into *meta (when kOk). On kOk,
// *payload (if not null) views the payload inside `record`. Never reads outside `record`.
// Checks run in this order, so the outcome names the first thing wrong: magic (over the bytes
// present) -> version (if present) -> header length -> payload length -> checksum.
RecordCheck CheckRecordIntegrity(std::span<const uint8_t> record, RecordMeta* meta,
                                 std::span<const uint8_t>* payload,
                                 bool verify_checksum = true);

// verify_checksum = false skips only the checksum (framing and lengths are always checked): for a
// caller that got the record from a store that verified it already (DiskTier, RedisTier do).
// CheckRecordIntegrity, then kForeign unless the header equals `expected` in every field. A
// checksum failure is reported as kCorrupt even when the damaged field is the hash: identity is
// only compared on a record that verifies.
RecordCheck CheckRecord(std::span<const uint8_t> record, const RecordMeta& expected,
                        std::span<const uint8_t>* payload,
                        bool verify_checksum = true);

}  // namespace kvengine
