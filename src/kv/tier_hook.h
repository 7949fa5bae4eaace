// KvTierHook: the KV manager's seam to the offload tiers below the pool (src/tier implements it).
//
// The manager calls it on the engine loop thread only, from inside its own operations:
//   OnEvict     a cached block is about to be reused (or dropped by DemoteCached): `bytes` hold
//               its KV for the last time, so a tier that wants it must copy them now;
//   OnComplete  a full block's KV was computed and indexed (write-on-complete policies, e.g.
//               publishing every block to a shared Redis);
//   Has / Fill  a prefix lookup that misses the pool asks whether a tier can fill the block
//               synchronously (host RAM); a fresh sequence then takes a pool block and Fill
//               copies the bytes in. Pin/Unpin bracket an adoption so that evictions caused
//               by taking blocks for it cannot push the very blocks it is about to fill out
//               of the tier.
// Disk and Redis are never consulted here (they are slow): the tier manager prefetches their
// blocks into RAM ahead of admission, and lookups see them as RAM hits.
#pragma once

#include <cstdint>
#include <span>

#include "kv/block_hash.h"

namespace kvengine {

class KvTierHook {
 public:
  virtual ~KvTierHook() = default;
  virtual void OnEvict(int group, const BlockHash& hash, std::span<const uint8_t> bytes) = 0;
  virtual void OnComplete(int group, const BlockHash& hash, std::span<const uint8_t> bytes) = 0;
  virtual bool Has(int group, const BlockHash& hash) const = 0;
  // Copies the block's bytes (exactly dst.size()) into dst; false if the tier cannot.
  virtual bool Fill(int group, const BlockHash& hash, std::span<uint8_t> dst) = 0;
  virtual void Pin(int group, const BlockHash& hash) = 0;
  virtual void Unpin(int group, const BlockHash& hash) = 0;
};

}  // namespace kvengine
