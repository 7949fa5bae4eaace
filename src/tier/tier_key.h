// TierKey: what the offload tiers (RAM, disk, Redis) store a block under: the block's chained
// prefix hash (kv/block_hash.h) and the KV group it belongs to. Groups of one model have
// different layouts (full vs sliding-window attention), so the same hash in two groups names two
// different byte strings.
//
// The hash already covers the model fingerprint, the KV dtype map, the block size and the cache
// salt, so two engines that agree on a key agree on the bytes; the stored record
// (block_record.h) repeats the namespace so a mix-up is caught on read anyway.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kv/block_hash.h"

namespace kvengine {

struct TierKey {
  BlockHash hash;
  int32_t group = 0;  // KV group index, >= 0.

  // "g<group>-<64 lowercase hex of hash>", e.g. "g0-3fa1…". Used as a file name (disk) and a
  // Redis key suffix, so it holds only [0-9a-z-].
  std::string Name() const { return "g" + std::to_string(group) + "-" + hash.Hex(); }

  friend bool operator==(const TierKey& a, const TierKey& b) {
    return a.group == b.group && a.hash == b.hash;
  }
};

// The inverse of TierKey::Name(): nullopt unless `name` is exactly what Name() produces for some
// key (group in 0..999999999 without leading zeros, 64 lowercase hex digits).
std::optional<TierKey> ParseTierKeyName(std::string_view name);

struct TierKeyHasher {
  size_t operator()(const TierKey& k) const {
    // The digest is uniform already; mix the group in so g0/g1 of one hash land apart.
    return BlockHashHasher()(k.hash) ^ (static_cast<size_t>(k.group) * 0x9e3779b97f4a7c15ull);
  }
};

}  // namespace kvengine
