// RedisTier: the shared remote offload tier, a Redis server reached through hiredis 0.14.1 (the
// Debian 12 package: RESP2, blocking API, no redisConnectWithOptions). One SET per block, GETs
// pipelined, values = one encoded record (block_record.h), kept far below Redis's 512 MB bulk
// limit by max_value_bytes.
//
// Failure policy. Nothing the server or the network does may abort or throw: every failure is a
// miss (GetMany) or a returned Status (Put), counted in Stats(). Two kinds:
//   * connection failures: connect refused or timed out, a command timeout, EOF (server killed
//     or restarted), a protocol error, an unexpected reply type (the reply stream can no longer
//     be trusted). hiredis marks the context dead; it is freed, and the next connect waits out a
//     capped exponential backoff (backoff_initial_ms doubling up to backoff_max_ms). After
//     breaker_threshold consecutive failures the circuit breaker opens: no network call at all
//     for breaker_cooldown_ms, then one trial call; its success closes the breaker, its failure
//     reopens it for another cooldown. Calls refused by backoff or breaker count as `skipped`.
//   * error replies (-LOADING, -OOM, -READONLY, -MISCONF…): the server answered, so the stream is
//     in step and the connection is kept; the operation fails (a miss, or Put's Status), counted
//     in `errors`, but it neither backs off nor feeds the breaker (an answer is cheap; the breaker
//     guards the I/O thread against slow timeouts, and a full server must still serve reads).
// Values that come back over max_value_bytes, or that fail the record's framing/checksum, or
// that name another key's hash/group are misses counted as `corrupt`.
//
// Time (backoff, breaker) comes from the injected Clock. A process that has not ignored SIGPIPE
// is protected anyway: each call blocks SIGPIPE on the calling thread and discards one raised by
// writing to a dropped connection.
//
// Owner: the tier manager; every method but Stats() runs on its one I/O thread (block_store.h).
// The redisContext is never shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "kvengine/status.h"
#include "tier/block_store.h"

struct redisContext;  // hiredis, kept out of this header.

namespace kvengine {

struct RedisEndpoint {
  std::string host;       // TCP host name or address (IPv6 without brackets); empty for unix.
  int port = 0;           // 1..65535 for TCP.
  std::string unix_path;  // Socket path for "unix:/path"; empty for TCP.
  bool is_unix() const { return !unix_path.empty(); }
};

// "host:port", "[v6addr]:port" or "unix:/path/to/socket"; InvalidArgument with the reason else.
Result<RedisEndpoint> ParseRedisEndpoint(std::string_view endpoint);

struct RedisTierOptions {
  std::string endpoint;                     // See ParseRedisEndpoint.
  std::string key_prefix = "kvengine:kv:";  // Redis key = key_prefix + TierKey::Name().
  int64_t connect_timeout_ms = 500;
  int64_t command_timeout_ms = 1000;       // Per socket read/write; a timeout is a failure.
  int64_t backoff_initial_ms = 100;        // Reconnect delay after the first failure.
  int64_t backoff_max_ms = 5000;           // Cap of the doubling delay.
  int breaker_threshold = 5;               // Consecutive connection failures that open it.
  int64_t breaker_cooldown_ms = 30000;     // Open this long, then one trial call.
  uint64_t max_value_bytes = 64ull << 20;  // Larger Puts are refused; larger replies are misses.
  const Clock* clock = nullptr;            // null: SteadyClock::Get().
};

class RedisTier final : public BlockStore {
 public:
  // Validates the options and the endpoint; does not connect (the first call does).
  static Result<std::unique_ptr<RedisTier>> Create(RedisTierOptions options);
  ~RedisTier() override;
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  std::string_view name() const override { return "redis"; }
  // OutOfRange over max_value_bytes (no network call); Unavailable when skipped, failed or
  // refused by the server (the message carries the server's error).
  Status Put(const TierKey& key, std::span<const uint8_t> record) override;
  // One pipeline: all GETs sent, then all replies read. A connection failure part way makes the
  // remaining keys misses.
  void GetMany(std::span<const TierKey> keys,
               std::vector<std::optional<std::vector<uint8_t>>>* out) override;
  void Erase(const TierKey& key) override;
  BlockStoreStats Stats() const override { return counters_.Snapshot(0); }

  // PING through the same admission path as any call (startup checks, tests).
  Status Ping();
  bool connected() const { return ctx_ != nullptr; }
  // The last failure's description ("connect: Connection refused"), for logs.
  const std::string& last_error() const { return last_error_; }

 private:
  RedisTier(RedisTierOptions options, RedisEndpoint endpoint);
  // True with a live context; false when backoff or the breaker refuse (counted as skipped) or
  // the connect fails (counted as a failure).
  bool Admit();
  bool Connect();
  // A connection failure: frees the context, schedules the next connect, maybe opens the breaker.
  void Fail(std::string what);
  // The server answered in step: the failure run is over and an open breaker closes.
  void Succeed();
  std::string RedisKey(const TierKey& key) const { return options_.key_prefix + key.Name(); }
  // Whether a GET reply's bytes are a sound record of `key` within max_value_bytes.
  bool AcceptValue(const TierKey& key, const char* data, size_t size);

  const RedisTierOptions options_;
  const RedisEndpoint endpoint_;
  const Clock* const clock_;
  redisContext* ctx_ = nullptr;  // Live connection or null; owned (redisFree).
  bool ever_connected_ = false;
  int consecutive_failures_ = 0;
  int64_t next_connect_ns_ = 0;  // No connect attempt before this (backoff).
  bool breaker_open_ = false;
  int64_t breaker_until_ns_ = 0;  // While open: no network call before this.
  std::string last_error_;
  BlockStoreCounters counters_;
};

}  // namespace kvengine
