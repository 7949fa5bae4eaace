#include "base/size_parse.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(ParseSizeTest, Suffixes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseSize("24GiB"), 24ull << 30);
  EXPECT_EQ(*ParseSize("24gib"), 24ull << 30);
  EXPECT_EQ(*ParseSize("1.5G"), 3ull << 29);
  EXPECT_EQ(*ParseSize("2GB"), 2000000000u);
  EXPECT_EQ(*ParseSize("1 TiB"), 1ull << 40);
}

TEST(ParseSizeTest, RejectsGarbage) {
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("GiB").ok());
  EXPECT_FALSE(ParseSize("12XB").ok());
  EXPECT_FALSE(ParseSize("-5").ok());
  EXPECT_FALSE(ParseSize("1e30").ok());
  EXPECT_FALSE(ParseSize("99999999999TiB").ok());
}

TEST(ParseTokenCountTest, KSuffix) {
  EXPECT_EQ(*ParseTokenCount("32k"), 32768u);
  EXPECT_EQ(*ParseTokenCount("4096"), 4096u);
  EXPECT_FALSE(ParseTokenCount("4k5").ok());
  EXPECT_FALSE(ParseTokenCount("1.3").ok());
}

TEST(FormatTokenCountTest, KForWholeMultiplesOf1024) {
  EXPECT_EQ(FormatTokenCount(32768), "32k");
  EXPECT_EQ(FormatTokenCount(1024), "1k");
  EXPECT_EQ(FormatTokenCount(1000), "1000");
  EXPECT_EQ(FormatTokenCount(1536), "1536");
  EXPECT_EQ(FormatTokenCount(0), "0");
  for (int64_t n : {0, 64, 4096, 16384, 5000}) {
    EXPECT_EQ(*ParseTokenCount(FormatTokenCount(n)), uint64_t(n));
  }
}

TEST(FormatBytesTest, Units) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(24ull << 30), "24.00 GiB");
}

}  // namespace
}  // namespace kvengine
