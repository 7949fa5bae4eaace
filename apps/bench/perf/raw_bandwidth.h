// Raw bandwidth of the media the KV offload tiers use, measured with the same count and size of
// values a tier transfer moves, so that `kvengine bench tiers` can put each tier's achieved rate
// next to what the medium itself gives in the same run:
//   memory  memcpy of `count` values of `value_bytes` from one buffer into another (one thread,
//           as the RAM tier copies a block into the pool);
//   disk    a sequential read, with the page cache bypassed, of a file of `count` chunks of
//           `value_bytes` rounded up to 4 KiB, one pread per chunk (as the disk tier reads one
//           block file per pread);
//   Redis   one pipeline of `count` GETs of values of `value_bytes`, through hiredis as the
//           Redis tier reads (the values are SET beforehand and deleted afterwards).
// Every figure is the median over `passes` timed passes (after an untimed warm-up pass where a
// warm-up means something: memory and Redis; a disk pass is cold by construction).
//
// Threading: call from one thread; each call owns its buffers, file and connection.
#pragma once

#include <cstdint>
#include <string>

#include "kvengine/status.h"

namespace kvengine {

struct RawBandwidth {
  // Median over the passes of value bytes per second (1e9 bytes/s). The disk reads whole 4 KiB
  // sectors, as the disk tier's O_DIRECT reads do, but counts only the value bytes in them, as
  // the tier counts record bytes: both rates are of useful bytes.
  double gb_per_s = 0;
  uint64_t bytes = 0;         // Value bytes one pass moves: value_bytes * count.
  uint64_t value_bytes = 0;   // Size of one value.
  uint64_t read_bytes = 0;    // Bytes one read transfers (disk: value_bytes rounded up to 4 KiB).
  int64_t count = 0;          // Values per pass.
  int passes = 0;
  std::string method;         // "memcpy", "O_DIRECT read", "read + POSIX_FADV_DONTNEED",
                              // "pipelined GET".
};

// memcpy between two buffers of value_bytes * count bytes, both written before timing.
Result<RawBandwidth> MeasureMemcpyBandwidth(uint64_t value_bytes, int64_t count, int passes);

// Writes "<dir>/raw-read-bandwidth.bin" (count chunks of value_bytes rounded up to 4 KiB), writes
// it back and drops its pages, then reads it front to back with O_DIRECT; where the file system
// refuses O_DIRECT (tmpfs), with read() after POSIX_FADV_DONTNEED before each pass (the method
// says which). The file is removed before returning.
Result<RawBandwidth> MeasureFileReadBandwidth(const std::string& dir, uint64_t value_bytes,
                                              int64_t count, int passes);

// `endpoint`: host:port or unix:PATH (tier/redis_tier.h). SETs count random values under
// "<key_prefix><i>", times pipelined GETs of all of them, then DELs them. `timeout_ms` bounds the
// connect and every socket read or write.
Result<RawBandwidth> MeasureRedisGetBandwidth(const std::string& endpoint,
                                              const std::string& key_prefix, uint64_t value_bytes,
                                              int64_t count, int passes, int64_t timeout_ms = 5000);

// Deletes every key that starts with `key_prefix` (SCAN MATCH + DEL); returns how many. The
// prefix must be plain (letters, digits, ':', '-', '_', '.'), so that it is no glob pattern.
Result<int64_t> DeleteRedisKeys(const std::string& endpoint, const std::string& key_prefix,
                                int64_t timeout_ms = 5000);

}  // namespace kvengine
