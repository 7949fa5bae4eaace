#include "tier/redis_tier.h"

#include <pthread.h>
#include <sys/time.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include "tier/block_record.h"

namespace kvengine {
namespace {

constexpr int64_t kNanosPerMs = 1000000;

timeval ToTimeval(int64_t ms) {
  timeval tv;
  tv.tv_sec = time_t(ms / 1000);
  tv.tv_usec = suseconds_t((ms % 1000) * 1000);
  return tv;
}

// Blocks SIGPIPE on this thread for the scope, and discards a SIGPIPE raised inside it (hiredis
// 0.14 writes with write(), not send(MSG_NOSIGNAL): a write to a dropped connection would
// otherwise kill a process that has not ignored SIGPIPE). A SIGPIPE already pending before the
// scope is left pending.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~ScopedSigpipeBlock() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      ::sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero = {0, 0};
        while (::sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

std::string ContextError(const redisContext* c) {
  return c == nullptr ? "out of memory" : fmt::format("{} (hiredis error {})", c->errstr, c->err);
}

}  // namespace

Result<RedisEndpoint> ParseRedisEndpoint(std::string_view endpoint) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("redis endpoint \"{}\": {} (expected host:port, [ipv6]:port or unix:/path)",
                    endpoint, why));
  };
  RedisEndpoint ep;
  if (endpoint.starts_with("unix:")) {
    std::string_view path = endpoint.substr(5);
    if (path.empty()) return bad("empty socket path");
    if (path.size() >= sizeof(sockaddr_un{}.sun_path)) return bad("socket path too long");
    if (path.find('\0') != std::string_view::npos) return bad("NUL in socket path");
    ep.unix_path = std::string(path);
    return ep;
  }
  size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = endpoint.substr(0, colon);
  std::string_view port = endpoint.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad("empty host");
  if (host.find_first_of(std::string_view("\0 \t[]/", 6)) != std::string_view::npos) {
    return bad("bad character in host");
  }
  if (port.empty() || port.size() > 5) return bad("port must be 1..65535");
  int p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("port must be 1..65535");
    p = p * 10 + (c - '0');
  }
  if (p < 1 || p > 65535) return bad("port must be 1..65535");
  ep.host = std::string(host);
  ep.port = p;
  return ep;
}

Result<std::unique_ptr<RedisTier>> RedisTier::Create(RedisTierOptions options) {
  KV_ASSIGN_OR_RETURN(RedisEndpoint ep, ParseRedisEndpoint(options.endpoint));
  // Every duration at most a day: then initial_ms << 30 and ms * 1e6 cannot overflow int64.
  constexpr int64_t kMaxMs = 24 * 3600 * 1000;
  for (int64_t ms :
       {options.connect_timeout_ms, options.command_timeout_ms, options.backoff_initial_ms,
        options.backoff_max_ms, options.breaker_cooldown_ms}) {
    if (ms > kMaxMs) return InvalidArgument("redis tier: durations must be at most 24 h");
  }
  if (options.connect_timeout_ms <= 0 || options.command_timeout_ms <= 0) {
    return InvalidArgument("redis tier: timeouts must be > 0 ms");
  }
  if (options.backoff_initial_ms < 0 || options.backoff_max_ms < options.backoff_initial_ms ||
      options.breaker_cooldown_ms < 0 || options.breaker_threshold < 1) {
    return InvalidArgument(
        "redis tier: need 0 <= backoff_initial_ms <= backoff_max_ms, breaker_cooldown_ms >= 0 "
        "and breaker_threshold >= 1");
  }
  constexpr uint64_t kBulkLimit = 512ull << 20;  // Redis's proto-max-bulk-len default.
  if (options.max_value_bytes == 0 || options.max_value_bytes >= kBulkLimit) {
    return InvalidArgument("redis tier: max_value_bytes must be in (0, 512 MiB)");
  }
  return std::unique_ptr<RedisTier>(new RedisTier(std::move(options), std::move(ep)));
}

RedisTier::RedisTier(RedisTierOptions options, RedisEndpoint endpoint)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      clock_(options_.clock != nullptr ? options_.clock : &SteadyClock::Get()) {}

RedisTier::~RedisTier() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

bool RedisTier::Admit() {
  const int64_t now = clock_->NowNanos();
  if (breaker_open_) {
    if (now < breaker_until_ns_) {
      BlockStoreCounters::Add(counters_.skipped);
      return false;
    }
    // Cooldown over: this call is the one trial (the context is null, so it connects now).
  } else if (ctx_ == nullptr && now < next_connect_ns_) {
    BlockStoreCounters::Add(counters_.skipped);
    return false;
  }
  return ctx_ != nullptr || Connect();
}

bool RedisTier::Connect() {
  const timeval connect_tv = ToTimeval(options_.connect_timeout_ms);
  redisContext* c =
      endpoint_.is_unix()
          ? redisConnectUnixWithTimeout(endpoint_.unix_path.c_str(), connect_tv)
          : redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_tv);
  if (c == nullptr || c->err != 0) {
    std::string what = "connect: " + ContextError(c);
    if (c != nullptr) redisFree(c);
    Fail(std::move(what));
    return false;
  }
  if (redisSetTimeout(c, ToTimeval(options_.command_timeout_ms)) != REDIS_OK) {
    std::string what = "set timeout: " + ContextError(c);
    redisFree(c);
    Fail(std::move(what));
    return false;
  }
  if (!endpoint_.is_unix()) redisEnableKeepAlive(c);  // Best effort.
  ctx_ = c;
  if (ever_connected_) BlockStoreCounters::Add(counters_.reconnects);
  ever_connected_ = true;
  return true;
}

void RedisTier::Fail(std::string what) {
  if (ctx_ != nullptr) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  last_error_ = std::move(what);
  BlockStoreCounters::Add(counters_.errors);
  const int64_t now = clock_->NowNanos();
  if (consecutive_failures_ < (1 << 20)) ++consecutive_failures_;
  // Backoff: initial * 2^(failures-1), capped. No overflow: the shift is at most 30 and Create
  // bounds every duration by a day.
  const int shift = std::min(consecutive_failures_ - 1, 30);
  const int64_t backoff_ms =
      std::min(options_.backoff_max_ms, options_.backoff_initial_ms << shift);
  next_connect_ns_ = now + std::max<int64_t>(backoff_ms, 0) * kNanosPerMs;
  if (breaker_open_ || consecutive_failures_ >= options_.breaker_threshold) {
    // Opens it, or (a failed trial) keeps it open for another cooldown.
    breaker_open_ = true;
    breaker_until_ns_ = now + options_.breaker_cooldown_ms * kNanosPerMs;
    counters_.breaker_open.store(true, std::memory_order_relaxed);
  }
}

void RedisTier::Succeed() {
  consecutive_failures_ = 0;
  if (breaker_open_) {
    breaker_open_ = false;
    counters_.breaker_open.store(false, std::memory_order_relaxed);
  }
}

bool RedisTier::AcceptValue(const TierKey& key, const char* data, size_t size) {
  if (size > options_.max_value_bytes) return false;
  RecordMeta meta;
  auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data), size);
  return CheckRecordIntegrity(bytes, &meta, nullptr) == RecordCheck::kOk && meta.hash == key.hash &&
         meta.group == key.group && meta.payload_format == key.format;
}

Status RedisTier::Put(const TierKey& key, std::span<const uint8_t> record) {
  if (record.size() > options_.max_value_bytes) {
    BlockStoreCounters::Add(counters_.errors);
    return OutOfRange(fmt::format("redis tier: record of {} bytes exceeds max_value_bytes {}",
                                  record.size(), options_.max_value_bytes));
  }
  ScopedSigpipeBlock no_sigpipe;
  if (!Admit()) return Unavailable("redis tier: unavailable, last error: " + last_error_);
  const std::string rkey = RedisKey(key);
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommand(ctx_, "SET %b %b", rkey.data(), rkey.size(), record.data(), record.size())));
  if (reply == nullptr) {
    Fail("SET: " + ContextError(ctx_));
    return Unavailable("redis tier: " + last_error_);
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    Succeed();  // The server answered in step; the command itself was refused.
    BlockStoreCounters::Add(counters_.errors);
    return Unavailable(
        fmt::format("redis tier: SET refused: {}", std::string_view(reply->str, reply->len)));
  }
  if (reply->type != REDIS_REPLY_STATUS) {
    Fail(fmt::format("SET: unexpected reply type {}", reply->type));
    return Unavailable("redis tier: " + last_error_);
  }
  Succeed();
  BlockStoreCounters::Add(counters_.bytes_written, record.size());
  return Status::Ok();
}

void RedisTier::GetMany(std::span<const TierKey> keys,
                        std::vector<std::optional<std::vector<uint8_t>>>* out) {
  out->resize(keys.size());
  size_t answered = 0;  // Keys whose reply was read; the rest are misses.
  if (!keys.empty()) {
    ScopedSigpipeBlock no_sigpipe;
    bool ok = Admit();
    for (size_t i = 0; ok && i < keys.size(); ++i) {
      const std::string rkey = RedisKey(keys[i]);
      if (redisAppendCommand(ctx_, "GET %b", rkey.data(), rkey.size()) != REDIS_OK) {
        Fail("GET: append: " + ContextError(ctx_));
        ok = false;
      }
    }
    for (; ok && answered < keys.size(); ++answered) {
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
        Fail("GET: " + ContextError(ctx_));
        break;
      }
      ReplyPtr reply(static_cast<redisReply*>(raw));
      std::optional<std::vector<uint8_t>>& slot = (*out)[answered];
      switch (reply->type) {
        case REDIS_REPLY_STRING:
          if (AcceptValue(keys[answered], reply->str, reply->len)) {
            if (!slot) slot.emplace();
            slot->assign(reinterpret_cast<const uint8_t*>(reply->str),
                         reinterpret_cast<const uint8_t*>(reply->str) + reply->len);
            BlockStoreCounters::Add(counters_.hits);
            BlockStoreCounters::Add(counters_.bytes_read, reply->len);
            continue;
          }
          BlockStoreCounters::Add(counters_.corrupt);
          break;
        case REDIS_REPLY_NIL:  // Absent.
          break;
        case REDIS_REPLY_ERROR:  // -LOADING and friends: a miss, the connection stays.
          BlockStoreCounters::Add(counters_.errors);
          last_error_ = "GET refused: " + std::string(reply->str, reply->len);
          break;
        default:  // Not a GET reply: the stream is out of step, drop the connection.
          Fail(fmt::format("GET: unexpected reply type {}", reply->type));
          ok = false;
          break;
      }
      slot.reset();
      BlockStoreCounters::Add(counters_.misses);
    }
    if (ok) Succeed();
  }
  for (size_t i = answered; i < keys.size(); ++i) {
    (*out)[i].reset();
    BlockStoreCounters::Add(counters_.misses);
  }
}

void RedisTier::Erase(const TierKey& key) {
  ScopedSigpipeBlock no_sigpipe;
  if (!Admit()) return;
  const std::string rkey = RedisKey(key);
  ReplyPtr reply(static_cast<redisReply*>(redisCommand(ctx_, "DEL %b", rkey.data(), rkey.size())));
  if (reply == nullptr) {
    Fail("DEL: " + ContextError(ctx_));
  } else if (reply->type == REDIS_REPLY_ERROR) {
    BlockStoreCounters::Add(counters_.errors);
    Succeed();
  } else if (reply->type != REDIS_REPLY_INTEGER) {
    Fail(fmt::format("DEL: unexpected reply type {}", reply->type));
  } else {
    Succeed();
  }
}

Status RedisTier::Ping() {
  ScopedSigpipeBlock no_sigpipe;
  if (!Admit()) return Unavailable("redis tier: unavailable, last error: " + last_error_);
  ReplyPtr reply(static_cast<redisReply*>(redisCommand(ctx_, "PING")));
  if (reply == nullptr) {
    Fail("PING: " + ContextError(ctx_));
    return Unavailable("redis tier: " + last_error_);
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    Succeed();
    BlockStoreCounters::Add(counters_.errors);
    return Unavailable("redis tier: PING refused: " + std::string(reply->str, reply->len));
  }
  if (reply->type != REDIS_REPLY_STATUS) {
    Fail(fmt::format("PING: unexpected reply type {}", reply->type));
    return Unavailable("redis tier: " + last_error_);
  }
  Succeed();
  return Status::Ok();
}

}  // namespace kvengine
