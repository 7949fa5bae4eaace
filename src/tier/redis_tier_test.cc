// RedisTier against a real redis-server started by the fixture (unix socket and TCP), and against
// fake servers that answer like a loading, broken or vanishing Redis. Every failure must be a miss
// or a failed Put: never a crash, an abort or a hang.
#include "tier/redis_tier.h"

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tier/block_record.h"
#include "tier/redis_test_server.h"

namespace kvengine {
namespace {

using tier_test::FakeRedisServer;
using tier_test::RedisServer;
using tier_test::TempDir;
constexpr int64_t kMs = 1000000;

TierKey RedisKey(int i) { return TierKey{BlockHash{Sha256Of("block " + std::to_string(i))}, 1}; }

std::vector<uint8_t> RedisRecord(int i, size_t payload) {
  std::mt19937 rng(uint32_t(i) * 7 + 1);
  std::vector<uint8_t> bytes(payload);
  for (uint8_t& b : bytes) b = uint8_t(rng());
  RecordMeta meta;
  meta.namespace_digest = Sha256Of("ns");
  meta.hash = RedisKey(i).hash;
  meta.group = 1;
  meta.payload_bytes = payload;
  return EncodeRecord(meta, bytes);
}

std::optional<std::vector<uint8_t>> GetOne(RedisTier& t, const TierKey& k) {
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t.GetMany(std::span<const TierKey>(&k, 1), &out);
  return out.at(0);
}

std::unique_ptr<RedisTier> MakeTier(RedisTierOptions o) {
  Result<std::unique_ptr<RedisTier>> t = RedisTier::Create(std::move(o));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

#define KV_REQUIRE_REDIS_SERVER()                                                 \
  do {                                                                            \
    if (!tier_test::RedisServerOnPath()) {                                        \
      if (tier_test::InCi()) FAIL() << "redis-server is not on PATH (CI is set)"; \
      GTEST_SKIP() << "redis-server is not on PATH (scripts/install-deps.sh)";    \
    }                                                                             \
  } while (0)

class RedisTierTest : public ::testing::TestWithParam<RedisServer::Transport> {
 protected:
  void SetUp() override {
    KV_REQUIRE_REDIS_SERVER();
    server_ = std::make_unique<RedisServer>(GetParam(), dir_.path());
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  RedisTierOptions Options() {
    RedisTierOptions o;
    o.endpoint = server_->endpoint();
    o.clock = &clock_;
    o.backoff_initial_ms = 100;
    o.backoff_max_ms = 400;
    o.breaker_threshold = 3;
    o.breaker_cooldown_ms = 10000;
    return o;
  }

  TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<RedisServer> server_;
};

TEST_P(RedisTierTest, RoundTripAndPipelinedMisses) {
  auto t = MakeTier(Options());
  ASSERT_TRUE(t);
  for (int i = 0; i < 50; i += 2)
    ASSERT_TRUE(t->Put(RedisKey(i), RedisRecord(i, 1000 + 37 * i)).ok()) << i;
  ASSERT_TRUE(t->Put(RedisKey(100), RedisRecord(100, 2 << 20)).ok());  // A 2 MiB block.
  std::vector<TierKey> keys;
  for (int i = 0; i < 50; ++i) keys.push_back(RedisKey(i));
  keys.push_back(RedisKey(100));
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t->GetMany(keys, &out);
  ASSERT_EQ(out.size(), keys.size());
  for (int i = 0; i < 50; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(out[size_t(i)], RedisRecord(i, 1000 + 37 * i)) << i;
    } else {
      EXPECT_FALSE(out[size_t(i)].has_value()) << i;
    }
  }
  EXPECT_EQ(out[50], RedisRecord(100, 2 << 20));
  BlockStoreStats s = t->Stats();
  EXPECT_EQ(s.hits, 26u);
  EXPECT_EQ(s.misses, 25u);
  EXPECT_EQ(s.bytes_read, s.bytes_written);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(server_->Command({"EXISTS", "kvengine:kv:" + RedisKey(0).Name()}), "1");
  t->Erase(RedisKey(0));
  EXPECT_FALSE(GetOne(*t, RedisKey(0)).has_value());
}

TEST_P(RedisTierTest, DamagedAndForeignValuesAreMisses) {
  auto t = MakeTier(Options());
  ASSERT_TRUE(t);
  std::vector<uint8_t> rec = RedisRecord(1, 500);
  rec[300] ^= 1;
  const std::string prefix = "kvengine:kv:";
  server_->Command({"SET", prefix + RedisKey(1).Name(), std::string(rec.begin(), rec.end())});
  std::vector<uint8_t> other = RedisRecord(3, 500);  // A sound record stored under another key.
  server_->Command({"SET", prefix + RedisKey(2).Name(), std::string(other.begin(), other.end())});
  server_->Command({"SET", prefix + RedisKey(4).Name(), "not a record"});
  server_->Command({"RPUSH", prefix + RedisKey(5).Name(), "a list"});  // GET: -WRONGTYPE.
  std::vector<TierKey> keys = {RedisKey(1), RedisKey(2), RedisKey(4), RedisKey(5)};
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t->GetMany(keys, &out);
  for (const auto& o : out) EXPECT_FALSE(o.has_value());
  EXPECT_EQ(t->Stats().corrupt, 3u);
  EXPECT_EQ(t->Stats().errors, 1u);
  EXPECT_TRUE(t->connected());  // An error reply keeps the connection.
  EXPECT_TRUE(t->Ping().ok());
}

TEST_P(RedisTierTest, KilledServerIsAMissThenReconnectsAfterBackoff) {
  auto t = MakeTier(Options());
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Put(RedisKey(1), RedisRecord(1, 100)).ok());
  server_->Kill();
  EXPECT_FALSE(GetOne(*t, RedisKey(1)).has_value());  // The dead connection: a miss, not a crash.
  EXPECT_FALSE(t->connected());
  EXPECT_FALSE(t->Put(RedisKey(2), RedisRecord(2, 100)).ok());  // Within the backoff: skipped.
  EXPECT_EQ(t->Stats().skipped, 1u);
  ASSERT_TRUE(server_->Start().ok());
  // Still within the 100 ms backoff: no connect attempt even though the server is back.
  EXPECT_FALSE(t->Put(RedisKey(2), RedisRecord(2, 100)).ok());
  EXPECT_EQ(t->Stats().skipped, 2u);
  clock_.Advance(100 * kMs);
  ASSERT_TRUE(t->Put(RedisKey(2), RedisRecord(2, 100)).ok()) << t->last_error();
  EXPECT_EQ(GetOne(*t, RedisKey(2)), RedisRecord(2, 100));
  EXPECT_FALSE(GetOne(*t, RedisKey(1)).has_value());  // No persistence: the restart lost it.
  EXPECT_EQ(t->Stats().reconnects, 1u);
  EXPECT_FALSE(t->Stats().breaker_open);
}

TEST_P(RedisTierTest, BreakerOpensAfterConsecutiveFailuresAndClosesAfterCooldown) {
  auto t = MakeTier(Options());
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Ping().ok());
  server_->Kill();
  // Failures 1..3, each attempt after its backoff (100, 200 ms); the third opens the breaker.
  EXPECT_FALSE(t->Ping().ok());
  clock_.Advance(100 * kMs);
  EXPECT_FALSE(t->Ping().ok());
  EXPECT_FALSE(t->Stats().breaker_open);
  clock_.Advance(200 * kMs);
  EXPECT_FALSE(t->Ping().ok());
  EXPECT_TRUE(t->Stats().breaker_open);
  const uint64_t errors = t->Stats().errors;
  ASSERT_TRUE(server_->Start().ok());
  clock_.Advance(5000 * kMs);  // Past any backoff, within the 10 s cooldown: no network call.
  EXPECT_FALSE(GetOne(*t, RedisKey(1)).has_value());
  EXPECT_FALSE(t->Put(RedisKey(1), RedisRecord(1, 10)).ok());
  EXPECT_EQ(t->Stats().errors, errors);
  EXPECT_EQ(t->Stats().skipped, 2u);
  EXPECT_FALSE(t->connected());
  // After the cooldown one trial goes through; it succeeds and closes the breaker.
  clock_.Advance(5000 * kMs);
  ASSERT_TRUE(t->Put(RedisKey(1), RedisRecord(1, 10)).ok()) << t->last_error();
  EXPECT_FALSE(t->Stats().breaker_open);
  EXPECT_EQ(GetOne(*t, RedisKey(1)), RedisRecord(1, 10));
  // A failed trial reopens it for another cooldown.
  server_->Kill();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(t->Ping().ok());
    clock_.Advance(400 * kMs);
  }
  ASSERT_TRUE(t->Stats().breaker_open);
  clock_.Advance(10000 * kMs);
  EXPECT_FALSE(t->Ping().ok());  // The trial: connection refused.
  EXPECT_TRUE(t->Stats().breaker_open);
  const uint64_t skipped = t->Stats().skipped;
  clock_.Advance(9000 * kMs);
  EXPECT_FALSE(t->Ping().ok());
  EXPECT_EQ(t->Stats().skipped, skipped + 1);
}

TEST_P(RedisTierTest, PausedServerTimesOutAsAMiss) {
  RedisTierOptions o = Options();
  o.command_timeout_ms = 100;
  auto t = MakeTier(o);
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Put(RedisKey(1), RedisRecord(1, 100)).ok());
  ASSERT_EQ(server_->Command({"CLIENT", "PAUSE", "500"}), "OK");
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(GetOne(*t, RedisKey(1)).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(450));
  EXPECT_FALSE(t->connected());
  EXPECT_EQ(t->Stats().errors, 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  clock_.Advance(100 * kMs);
  EXPECT_EQ(GetOne(*t, RedisKey(1)), RedisRecord(1, 100));
}

TEST_P(RedisTierTest, FullServerRefusesPutsCleanly) {
  auto t = MakeTier(Options());
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Put(RedisKey(0), RedisRecord(0, 1000)).ok());
  ASSERT_EQ(server_->Command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}), "OK");
  ASSERT_EQ(server_->Command({"CONFIG", "SET", "maxmemory", "1mb"}), "OK");
  Status refused;
  for (int i = 1; i < 40 && refused.ok(); ++i)
    refused = t->Put(RedisKey(i), RedisRecord(i, 256 << 10));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("OOM"), std::string::npos) << refused.ToString();
  EXPECT_TRUE(t->connected());
  EXPECT_EQ(GetOne(*t, RedisKey(0)), RedisRecord(0, 1000));  // Reads still served.
  EXPECT_FALSE(t->Stats().breaker_open);
}

INSTANTIATE_TEST_SUITE_P(Transports, RedisTierTest,
                         ::testing::Values(RedisServer::Transport::kUnix,
                                           RedisServer::Transport::kTcp),
                         [](const auto& p) {
                           return p.param == RedisServer::Transport::kUnix ? "Unix" : "Tcp";
                         });

// Fake servers: no redis-server needed.
struct FakeCase {
  const char* name;
  std::string reply;
  FakeRedisServer::Mode mode;
  bool stays_connected;
};

class RedisFakeServerTest : public ::testing::TestWithParam<FakeCase> {};

TEST_P(RedisFakeServerTest, EveryBadAnswerIsAMiss) {
  FakeRedisServer fake(GetParam().reply, GetParam().mode);
  ManualClock clock;
  RedisTierOptions o;
  o.endpoint = fake.endpoint();
  o.clock = &clock;
  o.command_timeout_ms = 200;
  auto t = MakeTier(o);
  ASSERT_TRUE(t);
  std::vector<TierKey> keys = {RedisKey(1), RedisKey(2), RedisKey(3)};
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t->GetMany(keys, &out);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& o2 : out) EXPECT_FALSE(o2.has_value());
  EXPECT_EQ(t->Stats().misses, 3u);
  EXPECT_GE(t->Stats().errors, 1u);
  EXPECT_EQ(t->connected(), GetParam().stays_connected) << t->last_error();
  Status put = t->Put(RedisKey(1), RedisRecord(1, 10));
  EXPECT_FALSE(put.ok());
}

INSTANTIATE_TEST_SUITE_P(
    Answers, RedisFakeServerTest,
    ::testing::Values(
        FakeCase{"Loading", "-LOADING Redis is loading the dataset in memory\r\n",
                 FakeRedisServer::Mode::kPerCommand, true},
        FakeCase{"Garbage", std::string("\x01\xffgarbage\r\n", 11),
                 FakeRedisServer::Mode::kPerCommand, false},
        FakeCase{"StatusForGet", "+OK\r\n", FakeRedisServer::Mode::kPerCommand, false},
        FakeCase{"ArrayForGet", "*1\r\n:1\r\n", FakeRedisServer::Mode::kPerCommand, false},
        FakeCase{"HugeBulkThenClose", "$999999999999\r\nabc", FakeRedisServer::Mode::kOnceThenClose,
                 false},
        FakeCase{"IntegerForGet", ":1\r\n", FakeRedisServer::Mode::kPerCommand, false},
        FakeCase{"CloseAtOnce", "", FakeRedisServer::Mode::kOnceThenClose, false}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(RedisTierOptionsTest, EndpointsAndLimits) {
  Result<RedisEndpoint> tcp = ParseRedisEndpoint("cache.local:6380");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->host, "cache.local");
  EXPECT_EQ(tcp->port, 6380);
  Result<RedisEndpoint> v6 = ParseRedisEndpoint("[::1]:6379");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  Result<RedisEndpoint> unix_ep = ParseRedisEndpoint("unix:/run/redis.sock");
  ASSERT_TRUE(unix_ep.ok());
  EXPECT_EQ(unix_ep->unix_path, "/run/redis.sock");
  for (const char* bad : {"", "localhost", "localhost:", ":6379", "host:0", "host:65536",
                          "host:12a", "host:123456", "::1:6379", "unix:", "a b:1"}) {
    Result<RedisEndpoint> r = ParseRedisEndpoint(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("redis endpoint"), std::string::npos);
    }
  }
  EXPECT_FALSE(ParseRedisEndpoint("unix:/" + std::string(200, 'x')).ok());
  RedisTierOptions o;
  o.endpoint = "127.0.0.1:1";
  o.max_value_bytes = 512ull << 20;
  EXPECT_FALSE(RedisTier::Create(o).ok());
  o.max_value_bytes = 1000;
  o.backoff_max_ms = int64_t(1) << 40;
  EXPECT_FALSE(RedisTier::Create(o).ok());
  o.backoff_max_ms = 5000;
  o.breaker_threshold = 0;
  EXPECT_FALSE(RedisTier::Create(o).ok());
  o.breaker_threshold = 5;
  // Over max_value_bytes: refused before any network call.
  auto t = MakeTier(o);
  ASSERT_TRUE(t);
  Status s = t->Put(RedisKey(1), RedisRecord(1, 1000));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(t->Stats().skipped, 0u);
  EXPECT_FALSE(t->connected());
}

}  // namespace
}  // namespace kvengine
