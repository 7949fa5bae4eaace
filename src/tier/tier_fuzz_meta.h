// The meta the tier fuzzer expects, shared with its seed writer so that some seeds pass the
// identity check (kOk) and others are foreign.
#pragma once

#include "tier/block_record.h"

namespace kvengine::tier_fuzz {

inline RecordMeta ExpectedMeta(uint64_t payload_bytes) {
  RecordMeta m;
  m.namespace_digest = Sha256Of("tier_fuzz namespace");
  m.hash.bytes = Sha256Of("tier_fuzz block");
  m.group = 1;
  m.payload_format = kPayloadRawPool;
  m.payload_bytes = payload_bytes;
  return m;
}

}  // namespace kvengine::tier_fuzz
