// TierConfig: which offload tiers an engine runs, as the CLI flags set them, and OpenTiers,
// which builds the stores and the TierManager over them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "kvengine/status.h"
#include "quant/kv_dtype.h"
#include "tier/tier_manager.h"

namespace kvengine {

struct TierConfig {
  uint64_t ram_bytes = 0;                // --swap-space: host RAM tier; 0 = none.
  std::string disk_path;                 // --kv-disk-path: disk tier directory; empty = none.
  uint64_t disk_bytes = uint64_t{8} << 30;  // --kv-disk-size.
  std::string redis;                     // --kv-redis host:port | unix:PATH; empty = none.
  RedisWritePolicy redis_write = RedisWritePolicy::kAll;  // --kv-redis-write all|evicted.
  std::string redis_key_prefix = "kvengine:kv:";
  int64_t redis_timeout_ms = 1000;       // Connect and per-command timeout.
  // --kv-tier-dtype: disk and Redis store blocks re-encoded in this dtype (e.g. int8 under an
  // f16 pool); unset: the pool's own bytes.
  std::optional<KvDtype> cold_dtype;

  bool enabled() const { return ram_bytes > 0 || !disk_path.empty() || !redis.empty(); }
};

// Opens the configured stores (the disk directory is created and indexed; Redis is connected
// lazily, so a Redis that is down at start is a miss later, not an error now).
Result<std::unique_ptr<TierManager>> OpenTiers(const TierConfig& config, TierLayout layout,
                                               const Clock* clock);

// "all" | "evicted".
Result<RedisWritePolicy> ParseRedisWritePolicy(std::string_view s);

}  // namespace kvengine
