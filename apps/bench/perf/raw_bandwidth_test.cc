// The raw-bandwidth measurements of the tier benchmark: each reports the shape it was asked
// for, cleans up after itself, and fails with a message, not a crash, on bad input or an
// unreachable Redis.
#include "bench/perf/raw_bandwidth.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "synth/synth_test_util.h"

namespace kvengine {
namespace {

TEST(RawBandwidthTest, MemcpyReportsTheShapeAskedFor) {
  Result<RawBandwidth> r = MeasureMemcpyBandwidth(64 << 10, 16, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->gb_per_s, 0);
  EXPECT_EQ(r->bytes, uint64_t{16} * (64 << 10));
  EXPECT_EQ(r->value_bytes, uint64_t{64} << 10);
  EXPECT_EQ(r->read_bytes, uint64_t{64} << 10);
  EXPECT_EQ(r->count, 16);
  EXPECT_EQ(r->passes, 3);
  EXPECT_EQ(r->method, "memcpy");
}

TEST(RawBandwidthTest, FileReadRoundsChunksTo4KiBAndRemovesItsFile) {
  synth_test::ScopedTempDir dir;
  Result<RawBandwidth> r = MeasureFileReadBandwidth(dir.path(), 10000, 8, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->gb_per_s, 0);
  EXPECT_EQ(r->value_bytes, 10000u);
  EXPECT_EQ(r->read_bytes, 12288u);  // Whole 4 KiB sectors, as O_DIRECT reads them.
  EXPECT_EQ(r->bytes, 8u * 10000u);  // Only the values count.
  EXPECT_TRUE(r->method == "O_DIRECT read" || r->method == "read + POSIX_FADV_DONTNEED")
      << r->method;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(RawBandwidthTest, BadShapesAndPlacesAreErrors) {
  EXPECT_FALSE(MeasureMemcpyBandwidth(0, 4, 1).ok());
  EXPECT_FALSE(MeasureMemcpyBandwidth(4096, 0, 1).ok());
  EXPECT_FALSE(MeasureMemcpyBandwidth(4096, 4, 0).ok());
  EXPECT_FALSE(MeasureMemcpyBandwidth(uint64_t{1} << 40, 1 << 20, 1).ok());
  Result<RawBandwidth> f = MeasureFileReadBandwidth("/nonexistent/dir", 4096, 4, 1);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/dir"), std::string::npos);
}

TEST(RawBandwidthTest, UnreachableRedisIsUnavailable) {
  synth_test::ScopedTempDir dir;
  const std::string endpoint = "unix:" + dir.File("no.sock");
  Result<RawBandwidth> r = MeasureRedisGetBandwidth(endpoint, "kvengine:test:", 4096, 4, 1, 200);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(DeleteRedisKeys(endpoint, "kvengine:test:", 200).ok());
  EXPECT_EQ(MeasureRedisGetBandwidth("nohost", "p:", 4096, 4, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DeleteRedisKeys(endpoint, "glob*").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvengine
