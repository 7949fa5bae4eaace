// BlockTranscoder: re-encodes one KV block between the pool's number formats and a colder, smaller
// one for the disk and Redis tiers (--kv-tier-dtype, e.g. f16 in the pool, int8 below it).
//
// The cold block has the pool block's layout (kv/block_layout.h) with every layer's K and V dtype
// replaced by the cold dtype. Encode decodes each row of the pool block to f32 and encodes it in
// the cold dtype; Decode does the reverse. A row already in the cold dtype is copied as is, so a
// cold dtype equal to the pool's is lossless. The cost in accuracy is that of quantizing KV to the
// cold dtype once (docs/tiers.md has the measured figure).
//
// Immutable after construction; any thread may call Encode/Decode concurrently.
#pragma once

#include <cstdint>
#include <span>

#include "kv/block_layout.h"
#include "kv/group_spec.h"

namespace kvengine {

// Record payload format of a block re-encoded in `dtype` (block_record.h: 0 = raw pool bytes).
uint32_t TranscodedPayloadFormat(KvDtype dtype);

class BlockTranscoder {
 public:
  BlockTranscoder(const KvGroupSpec& pool_spec, int block_size, KvDtype cold);

  size_t pool_bytes() const { return pool_.bytes_per_block(); }
  size_t cold_bytes() const { return cold_.bytes_per_block(); }
  KvDtype cold_dtype() const { return dtype_; }

  // pool.size() == pool_bytes(), cold.size() == cold_bytes(). Padding bytes are zeroed.
  void Encode(std::span<const uint8_t> pool, std::span<uint8_t> cold) const;
  void Decode(std::span<const uint8_t> cold, std::span<uint8_t> pool) const;

 private:
  // Converts every row of `from` (layout a) into `to` (layout b).
  void Convert(const BlockLayout& a, std::span<const uint8_t> from, const BlockLayout& b,
               std::span<uint8_t> to) const;

  KvGroupSpec spec_;
  KvDtype dtype_;
  BlockLayout pool_;
  BlockLayout cold_;
};

}  // namespace kvengine
