#include "server/stop_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kvengine::server {
namespace {

// Feeds `pieces`; returns everything released.
std::string Feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += m.Push(p);
  return out + m.Finish();
}

TEST(StopMatcherTest, HoldsBackAPossibleStopAndDropsIt) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.Push("abc S"), "abc ");  // "S" could start STOP.
  EXPECT_EQ(m.Push("T"), "");
  EXPECT_EQ(m.Push("OP and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "STOP");
  EXPECT_EQ(m.Push("x"), "");
  EXPECT_EQ(m.Finish(), "");
}

TEST(StopMatcherTest, ReleasesAFalseStart) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.Push("ST"), "");
  EXPECT_EQ(m.Push("x"), "STx");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.Push("STO"), "");
  EXPECT_EQ(m.Finish(), "STO");  // Generation ended: the held text was never a stop.
}

TEST(StopMatcherTest, EarliestOfSeveralAndOverlaps) {
  StopMatcher m({"world", "lo w", "\n\n"});
  EXPECT_EQ(Feed(m, {"hel", "lo wor", "ld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
  StopMatcher a({"aab"});
  EXPECT_EQ(Feed(a, {"a", "a", "a", "b", "c"}), "a");  // "aaab": the stop starts at 1.
  StopMatcher none({});
  EXPECT_EQ(Feed(none, {"any", "thing"}), "anything");
  StopMatcher empty({""});
  EXPECT_EQ(Feed(empty, {"x"}), "x");
}

TEST(StopMatcherTest, MultibyteStopStringsKeepTextValid) {
  StopMatcher m({"\xE2\x82\xAC!"});  // "€!"
  EXPECT_EQ(m.Push("a\xE2\x82\xAC"), "a");
  EXPECT_EQ(m.Push("?"), "\xE2\x82\xAC?");
  EXPECT_EQ(m.Push("\xE2\x82\xAC!"), "");
  EXPECT_TRUE(m.stopped());
}

// Property: for random texts split at random points, the output is the text cut before the
// earliest stop, and nothing after a stop's first byte is ever released.
TEST(StopMatcherTest, RandomSplitsMatchTheReference) {
  std::mt19937 rng(7);
  const std::vector<std::string> stops = {"ab", "bca", "ccc"};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    const int len = int(rng() % 20);
    for (int i = 0; i < len; ++i) text += char('a' + rng() % 3);
    size_t cut = std::string::npos;
    for (const std::string& s : stops) cut = std::min(cut, text.find(s));
    const std::string want = text.substr(0, cut);
    StopMatcher m(stops);
    std::string got;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t n = 1 + rng() % 4;
      got += m.Push(text.substr(pos, n));
      ASSERT_LE(got.size(), want.size()) << text;
      ASSERT_EQ(got, want.substr(0, got.size())) << text;
      pos += n;
    }
    got += m.Finish();
    ASSERT_EQ(got, want) << text;
    ASSERT_EQ(m.stopped(), cut != std::string::npos) << text;
  }
}

}  // namespace
}  // namespace kvengine::server
