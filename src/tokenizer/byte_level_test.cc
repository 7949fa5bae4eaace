// The GPT-2 byte alphabet: a bijection onto 256 printable characters, and its inverse.
#include "tokenizer/byte_level.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

TEST(ByteLevelTest, KnownCharacters) {
  EXPECT_EQ(ByteLevelCodePoint(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(ByteLevelCodePoint('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(ByteLevelCodePoint('\t'), 0x109u);  // "ĉ"
  EXPECT_EQ(ByteLevelCodePoint(0x00), 0x100u);
  EXPECT_EQ(ByteLevelCodePoint('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(ByteLevelCodePoint(0xE9), 0xE9u);   // Stands for itself.
  EXPECT_EQ(ByteLevelCodePoint(0xAD), 0x143u);  // The last of the remapped bytes.
  std::string s;
  AppendByteLevel(" hi\n", &s);
  EXPECT_EQ(s, "\xC4\xA0hi\xC4\x8A");  // "Ġhi" + "Ċ"
}

TEST(ByteLevelTest, IsABijectionOnPrintableCharacters) {
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = ByteLevelCodePoint(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second) << b;
    EXPECT_GT(cp, 0x20u);
    EXPECT_LT(cp, 0x144u);
  }
}

TEST(ByteLevelTest, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string encoded;
  AppendByteLevel(all, &encoded);
  EXPECT_TRUE(IsValidUtf8(encoded));
  std::string decoded;
  AppendFromByteLevel(encoded, &decoded);
  EXPECT_EQ(decoded, all);
}

TEST(ByteLevelTest, ForeignCharactersAndInvalidBytesPassThrough) {
  std::string out;
  // "€" (U+20AC) and U+0144 are outside the alphabet; \xFF is not UTF-8; "\xC4\xA0" is ' '.
  AppendFromByteLevel("\xE2\x82\xAC\xC5\x84\xFF\xC4\xA0", &out);
  EXPECT_EQ(out, "\xE2\x82\xAC\xC5\x84\xFF ");
}

}  // namespace
}  // namespace kvengine
