// UTF-8 validation and maximal-subpart repair.
#include "tokenizer/utf8.h"

#include <string>

#include <gtest/gtest.h>

namespace kvengine {
namespace {

const std::string kFffd(kUtf8Replacement);

TEST(Utf8Test, ValidStrings) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("hello, world\n"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));               // é
  EXPECT_TRUE(IsValidUtf8("\xE4\xB8\xAD\xE6\x96\x87"));  // 中文
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));          // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));          // U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));              // U+E000, just past the surrogates
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));      // NUL is a character.
}

TEST(Utf8Test, InvalidStrings) {
  EXPECT_FALSE(IsValidUtf8("\x80"));              // Lone continuation byte.
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // Overlong '/'.
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // Overlong 3-byte.
  EXPECT_FALSE(IsValidUtf8("\xF0\x80\x80\xAF"));  // Overlong 4-byte.
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // Surrogate U+D800.
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000.
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xF0\x9F\x98"));  // Truncated emoji.
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(IsValidUtf8("a\xC3\x62"));  // \x62 is 'b'.
}

TEST(Utf8Test, ScanReportsTruncationAndMaximalSubparts) {
  Utf8ScanResult r = ScanUtf8("\xF0\x9F\x98", 0);
  EXPECT_EQ(r.scan, Utf8Scan::kTruncated);
  EXPECT_EQ(r.length, 3u);
  r = ScanUtf8("\xF0\x9F\x41", 0);  // \x41 is 'A'.
  EXPECT_EQ(r.scan, Utf8Scan::kInvalid);
  EXPECT_EQ(r.length, 2u);
  r = ScanUtf8("\xE0\x80", 0);  // E0 80 can never start a valid sequence.
  EXPECT_EQ(r.scan, Utf8Scan::kInvalid);
  EXPECT_EQ(r.length, 1u);
  r = ScanUtf8("x\xC3\xA9", 1);
  EXPECT_EQ(r.scan, Utf8Scan::kValid);
  EXPECT_EQ(r.length, 2u);
}

TEST(Utf8Test, SanitizeReplacesEachMaximalSubpartOnce) {
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
  EXPECT_EQ(SanitizeUtf8("a\x80\x62"), "a" + kFffd + "b");
  // One U+FFFD for the cut emoji.
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98\x41"), kFffd + "A");
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), kFffd + kFffd);              // C0 is never a lead.
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // Surrogate: 3 subparts.
  EXPECT_EQ(SanitizeUtf8("ok\xE4\xB8"), "ok" + kFffd);             // Truncated tail.
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xFF\xFE\xF0\x9F\x98\x80\xC3")));
}

TEST(Utf8Test, LengthFromLead) {
  EXPECT_EQ(Utf8LengthFromLead('a'), 1u);
  EXPECT_EQ(Utf8LengthFromLead(0x80), 1u);
  EXPECT_EQ(Utf8LengthFromLead(0xC3), 2u);
  EXPECT_EQ(Utf8LengthFromLead(0xE2), 3u);
  EXPECT_EQ(Utf8LengthFromLead(0xF0), 4u);
  EXPECT_EQ(Utf8LengthFromLead(0xFF), 4u);
}

}  // namespace
}  // namespace kvengine
