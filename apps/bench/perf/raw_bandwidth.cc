#include "bench/perf/raw_bandwidth.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include "base/checked_math.h"
#include "base/clock.h"
#include "bench/perf/bench_rounds.h"
#include "tier/redis_tier.h"

namespace kvengine {
namespace {

constexpr uint64_t kDirectAlign = 4096;  // O_DIRECT buffer, offset and length alignment.
// Above this a measurement is refused: the caller asked for a transfer no tier makes.
constexpr uint64_t kMaxPassBytes = uint64_t{64} << 30;

using SteadyTime = std::chrono::steady_clock;

// value_bytes * count, bounded; the shape every measurement validates first.
Result<uint64_t> PassBytes(uint64_t value_bytes, int64_t count, int passes) {
  uint64_t total = 0;
  if (value_bytes == 0 || count <= 0 || passes <= 0 ||
      !CheckedMul(value_bytes, uint64_t(count), &total) || total > kMaxPassBytes) {
    return InvalidArgument(fmt::format(
        "raw bandwidth: need value_bytes > 0, count > 0, passes > 0 and at most {} bytes a "
        "pass (got {} x {}, {} passes)",
        kMaxPassBytes, value_bytes, count, passes));
  }
  return total;
}

// Bytes that are not all alike (no medium gets to compress or deduplicate them).
void FillPattern(uint8_t* p, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = rng();
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = uint8_t(rng());
}

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

// Closes the descriptor and removes the file when the measurement ends, however it ends.
class ScratchFile {
 public:
  explicit ScratchFile(std::string path) : path_(std::move(path)) {}
  ~ScratchFile() {
    Close();
    ::unlink(path_.c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Reads `count` chunks of `chunk` bytes at offsets 0, chunk, 2 chunk, ... into buf.
bool ReadSequential(int fd, uint8_t* buf, uint64_t chunk, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint64_t done = 0;
    while (done < chunk) {
      const ssize_t n = ::pread(fd, buf + done, chunk - done, off_t(uint64_t(i) * chunk + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += uint64_t(n);
    }
  }
  return true;
}

struct RedisDeleter {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
using RedisPtr = std::unique_ptr<redisContext, RedisDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval Timeval(int64_t ms) {
  timeval tv;
  tv.tv_sec = time_t(ms / 1000);
  tv.tv_usec = suseconds_t((ms % 1000) * 1000);
  return tv;
}

Result<RedisPtr> ConnectRedis(const std::string& endpoint, int64_t timeout_ms) {
  KV_ASSIGN_OR_RETURN(RedisEndpoint ep, ParseRedisEndpoint(endpoint));
  if (timeout_ms <= 0) return InvalidArgument("redis: the timeout must be > 0 ms");
  const timeval tv = Timeval(timeout_ms);
  RedisPtr c(ep.is_unix() ? redisConnectUnixWithTimeout(ep.unix_path.c_str(), tv)
                          : redisConnectWithTimeout(ep.host.c_str(), ep.port, tv));
  if (c == nullptr) return Unavailable("redis " + endpoint + ": out of memory");
  if (c->err != 0) return Unavailable(fmt::format("redis {}: connect: {}", endpoint, c->errstr));
  if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
    return Unavailable(fmt::format("redis {}: set timeout: {}", endpoint, c->errstr));
  }
  return c;
}

// Reads one reply of a pipeline; an error or a lost connection is a Status.
Result<ReplyPtr> NextReply(redisContext* c, const char* what) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
    return Unavailable(fmt::format("redis {}: {}", what, c->errstr));
  }
  ReplyPtr r(static_cast<redisReply*>(raw));
  if (r->type == REDIS_REPLY_ERROR) {
    return Unavailable(fmt::format("redis {} refused: {}", what, std::string(r->str, r->len)));
  }
  return r;
}

// Sends `count` commands built by append(i) in one pipeline, then reads every reply; check(i,
// reply) says whether reply i is the expected one.
template <typename Append, typename Check>
Status Pipeline(redisContext* c, int64_t count, const char* what, Append append, Check check) {
  for (int64_t i = 0; i < count; ++i) {
    if (append(i) != REDIS_OK) return Unavailable(fmt::format("redis {}: {}", what, c->errstr));
  }
  for (int64_t i = 0; i < count; ++i) {
    KV_ASSIGN_OR_RETURN(ReplyPtr r, NextReply(c, what));
    if (!check(i, *r)) return Unavailable(fmt::format("redis {}: unexpected reply", what));
  }
  return Status::Ok();
}

bool IsPlainPrefix(const std::string& p) {
  return !p.empty() && std::all_of(p.begin(), p.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == ':' || ch == '-' || ch == '_' || ch == '.';
  });
}

}  // namespace

Result<RawBandwidth> MeasureMemcpyBandwidth(uint64_t value_bytes, int64_t count, int passes) {
  KV_ASSIGN_OR_RETURN(const uint64_t total, PassBytes(value_bytes, count, passes));
  // src, dst: [count][value_bytes] each, every page written before timing.
  std::vector<uint8_t> src(total), dst(total, 0);
  FillPattern(src.data(), total, 1);
  std::vector<double> rates;
  for (int p = -1; p < passes; ++p) {  // p == -1: warm-up.
    const auto t0 = SteadyTime::now();
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t off = uint64_t(i) * value_bytes;
      std::memcpy(dst.data() + off, src.data() + off, value_bytes);
    }
    const double s = SecondsSince(t0);
    if (p >= 0 && s > 0) rates.push_back(double(total) / s / 1e9);
  }
  // The copies have an observable effect: compare one value.
  if (std::memcmp(dst.data(), src.data(), value_bytes) != 0) {
    return Internal("raw bandwidth: memcpy check failed");
  }
  return RawBandwidth{Median(rates), total, value_bytes, value_bytes, count, passes, "memcpy"};
}

Result<RawBandwidth> MeasureFileReadBandwidth(const std::string& dir, uint64_t value_bytes,
                                              int64_t count, int passes) {
  uint64_t chunk = 0;
  if (!CheckedAlignUp(value_bytes, kDirectAlign, &chunk)) {
    return InvalidArgument("raw bandwidth: value too large");
  }
  // The file: count whole chunks, bounded here (and so the values inside them).
  KV_RETURN_IF_ERROR(PassBytes(chunk, count, passes).status());
  const uint64_t total = value_bytes * uint64_t(count);
  AlignedBuffer buf(static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, chunk)));
  if (buf == nullptr) return Unavailable("raw bandwidth: cannot allocate the read buffer");
  FillPattern(buf.get(), chunk, 2);

  ScratchFile file(dir + "/raw-read-bandwidth.bin");
  auto io_error = [&](const char* what) {
    return Unavailable(
        fmt::format("raw disk bandwidth: {} {}: {}", what, file.path(), std::strerror(errno)));
  };
  file.Reset(::open(file.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.fd() < 0) return io_error("cannot create");
  for (int64_t i = 0; i < count; ++i) {
    buf.get()[0] = uint8_t(i);  // Chunks differ from one another.
    uint64_t done = 0;
    while (done < chunk) {
      const ssize_t n = ::write(file.fd(), buf.get() + done, chunk - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error("cannot write");
      done += uint64_t(n);
    }
  }
  // Written back, then dropped: the reads below find nothing in the page cache.
  if (::fdatasync(file.fd()) != 0) return io_error("cannot sync");
  ::posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED);
  file.Close();

  bool direct = true;
  std::vector<double> rates;
  for (int p = 0; p < passes; ++p) {
    int fd = direct ? ::open(file.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC) : -1;
    if (direct && fd < 0 && errno == EINVAL) direct = false;  // The file system refuses it.
    if (!direct) {
      fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    }
    file.Reset(fd);
    if (fd < 0) return io_error("cannot open");
    const auto t0 = SteadyTime::now();
    bool ok = ReadSequential(fd, buf.get(), chunk, count);
    if (!ok && direct && errno == EINVAL && p == 0) {  // Opened, but O_DIRECT reads refused.
      direct = false;
      --p;
      continue;
    }
    const double s = SecondsSince(t0);
    if (!ok) return io_error("cannot read");
    if (!direct) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (s > 0) rates.push_back(double(total) / s / 1e9);
  }
  return RawBandwidth{Median(rates),
                      total,
                      value_bytes,
                      chunk,
                      count,
                      passes,
                      direct ? "O_DIRECT read" : "read + POSIX_FADV_DONTNEED"};
}

Result<RawBandwidth> MeasureRedisGetBandwidth(const std::string& endpoint,
                                              const std::string& key_prefix, uint64_t value_bytes,
                                              int64_t count, int passes, int64_t timeout_ms) {
  KV_ASSIGN_OR_RETURN(const uint64_t total, PassBytes(value_bytes, count, passes));
  if (!IsPlainPrefix(key_prefix)) return InvalidArgument("redis: bad key prefix " + key_prefix);
  KV_ASSIGN_OR_RETURN(RedisPtr c, ConnectRedis(endpoint, timeout_ms));
  std::vector<uint8_t> value(value_bytes);
  FillPattern(value.data(), value_bytes, 3);
  std::vector<std::string> keys;
  for (int64_t i = 0; i < count; ++i) keys.push_back(key_prefix + std::to_string(i));

  Status st = Pipeline(
      c.get(), count, "SET",
      [&](int64_t i) {
        value[0] = uint8_t(i);
        const std::string& k = keys[size_t(i)];
        return redisAppendCommand(c.get(), "SET %b %b", k.data(), k.size(), value.data(),
                                  value.size());
      },
      [](int64_t, const redisReply& r) { return r.type == REDIS_REPLY_STATUS; });
  std::vector<double> rates;
  for (int p = -1; st.ok() && p < passes; ++p) {  // p == -1: warm-up.
    const auto t0 = SteadyTime::now();
    st = Pipeline(
        c.get(), count, "GET",
        [&](int64_t i) {
          const std::string& k = keys[size_t(i)];
          return redisAppendCommand(c.get(), "GET %b", k.data(), k.size());
        },
        [&](int64_t, const redisReply& r) {
          return r.type == REDIS_REPLY_STRING && r.len == value_bytes;
        });
    const double s = SecondsSince(t0);
    if (st.ok() && p >= 0 && s > 0) rates.push_back(double(total) / s / 1e9);
  }
  // The values go whether or not the GETs worked (best effort on a broken connection).
  const Status del = Pipeline(
      c.get(), count, "DEL",
      [&](int64_t i) {
        const std::string& k = keys[size_t(i)];
        return redisAppendCommand(c.get(), "DEL %b", k.data(), k.size());
      },
      [](int64_t, const redisReply& r) { return r.type == REDIS_REPLY_INTEGER; });
  KV_RETURN_IF_ERROR(st);
  KV_RETURN_IF_ERROR(del);
  return RawBandwidth{Median(rates), total,  value_bytes,    value_bytes,
                      count,         passes, "pipelined GET"};
}

Result<int64_t> DeleteRedisKeys(const std::string& endpoint, const std::string& key_prefix,
                                int64_t timeout_ms) {
  if (!IsPlainPrefix(key_prefix)) return InvalidArgument("redis: bad key prefix " + key_prefix);
  KV_ASSIGN_OR_RETURN(RedisPtr c, ConnectRedis(endpoint, timeout_ms));
  const std::string pattern = key_prefix + "*";
  std::string cursor = "0";
  int64_t deleted = 0;
  do {
    ReplyPtr r(static_cast<redisReply*>(redisCommand(
        c.get(), "SCAN %s MATCH %b COUNT 1000", cursor.c_str(), pattern.data(), pattern.size())));
    if (r == nullptr) return Unavailable(fmt::format("redis SCAN: {}", c->errstr));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
      return Unavailable("redis SCAN: unexpected reply");
    }
    cursor.assign(r->element[0]->str, r->element[0]->len);
    const redisReply& batch = *r->element[1];
    for (size_t i = 0; i < batch.elements; ++i) {
      const redisReply* k = batch.element[i];
      if (k->type != REDIS_REPLY_STRING) continue;
      ReplyPtr d(static_cast<redisReply*>(redisCommand(c.get(), "DEL %b", k->str, k->len)));
      if (d == nullptr) return Unavailable(fmt::format("redis DEL: {}", c->errstr));
      if (d->type == REDIS_REPLY_INTEGER) deleted += d->integer;
    }
  } while (cursor != "0");
  return deleted;
}

}  // namespace kvengine
