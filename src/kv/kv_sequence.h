// KvCacheManager's per-sequence state (internal to src/kv).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace kvengine {

struct KvCacheManager::Sequence {
  std::string salt;
  BlockHash root;                 // PrefixRootHash(namespace, salt).
  std::vector<int32_t> tokens;    // Every token appended, computed or not.
  int64_t computed = 0;           // Leading tokens whose KV is written.
  std::vector<BlockHash> hashes;  // Chained hashes of the leading full computed blocks.
  std::vector<std::vector<int32_t>> tables;  // [group][logical block] -> block id, -1 released.
  std::vector<int64_t> window_cursor;        // [group] logical blocks below this are released
                                             // unless they are sinks (windowed groups only).
};

}  // namespace kvengine
