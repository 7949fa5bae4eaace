#include "tier/tier_config.h"

#include "tier/disk_tier.h"
#include "tier/redis_tier.h"

namespace kvengine {

Result<std::unique_ptr<TierManager>> OpenTiers(const TierConfig& config, TierLayout layout,
                                               const Clock* clock) {
  std::unique_ptr<BlockStore> disk, redis;
  if (!config.disk_path.empty()) {
    DiskTierOptions o;
    o.dir = config.disk_path;
    o.capacity_bytes = config.disk_bytes;
    auto d = DiskTier::Open(std::move(o));
    if (!d.ok()) return Status(d.status().code(), "--kv-disk-path: " + d.status().message());
    disk = std::move(d).value();
  }
  if (!config.redis.empty()) {
    RedisTierOptions o;
    o.endpoint = config.redis;
    o.key_prefix = config.redis_key_prefix;
    o.connect_timeout_ms = config.redis_timeout_ms;
    o.command_timeout_ms = config.redis_timeout_ms;
    o.clock = clock;
    auto r = RedisTier::Create(std::move(o));
    if (!r.ok()) return Status(r.status().code(), "--kv-redis: " + r.status().message());
    redis = std::move(r).value();
  }
  layout.cold_dtype = config.cold_dtype;
  TierManagerOptions mo;
  mo.ram_bytes = config.ram_bytes;
  mo.redis_write = config.redis_write;
  mo.clock = clock;
  return std::make_unique<TierManager>(mo, std::move(layout), std::move(disk), std::move(redis));
}

Result<RedisWritePolicy> ParseRedisWritePolicy(std::string_view s) {
  if (s == "all") return RedisWritePolicy::kAll;
  if (s == "evicted") return RedisWritePolicy::kEvicted;
  return InvalidArgument("--kv-redis-write must be all or evicted, got '" + std::string(s) + "'");
}

}  // namespace kvengine
