// TierKey: what the offload tiers (RAM, disk, Redis) store a block under: the block's chained
// prefix hash (kv/block_hash.h), the KV group it belongs to, and the format of the stored record.
// Groups of one model have different layouts (full vs sliding-window attention), so the same
// hash in two groups names two different byte strings.
//
// The hash already covers the model fingerprint, the KV dtype map, the block size and the cache
// salt. What it does not cover is how a store's record encodes the block: the record version and
// the payload format (raw pool bytes, or re-encoded in a cold dtype, --kv-tier-dtype). Both are in
// the key, so engines that share a store (one Redis) with different cold dtypes or record versions
// write different keys and never overwrite each other's blocks. Two engines that agree on a key
// agree on the bytes; the stored record (block_record.h) repeats all of it so a mix-up is caught
// on read anyway.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kv/block_hash.h"

namespace kvengine {

struct TierKey {
  BlockHash hash;
  int32_t group = 0;    // KV group index, >= 0.
  uint32_t format = 0;  // The record's payload_format (block_record.h); 0: raw pool bytes.

  // "g<group>-v<record version>-f<format>-<64 lowercase hex of hash>", decimal numbers, e.g.
  // "g0-v1-f0-3fa1…" (raw pool bytes), "g0-v1-f259-3fa1…" (int8). Used as a file name (disk)
  // and a Redis key suffix, so it holds only [0-9a-z-]. The version is this build's
  // kRecordVersion: a record of another version is stored under another name.
  std::string Name() const;

  friend bool operator==(const TierKey& a, const TierKey& b) {
    return a.group == b.group && a.format == b.format && a.hash == b.hash;
  }
};

// The inverse of TierKey::Name(): nullopt unless `name` is exactly what Name() produces for some
// key (group in 0..999999999 and format in 0..999999999 without leading zeros, this build's
// record version, 64 lowercase hex digits).
std::optional<TierKey> ParseTierKeyName(std::string_view name);

struct TierKeyHasher {
  size_t operator()(const TierKey& k) const {
    // The digest is uniform already; mix the group and format in so keys of one hash land apart.
    return BlockHashHasher()(k.hash) ^ (static_cast<size_t>(k.group) * 0x9e3779b97f4a7c15ull) ^
           (static_cast<size_t>(k.format) * 0xc2b2ae3d27d4eb4full);
  }
};

}  // namespace kvengine
