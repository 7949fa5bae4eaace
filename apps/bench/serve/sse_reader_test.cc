#include "bench/serve/sse_reader.h"

#include "bench/serve/completion_chunk.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kvengine::loadgen {
namespace {

std::vector<std::string> FeedAll(SseReader& r, const std::vector<std::string>& pieces) {
  std::vector<std::string> events;
  for (const std::string& p : pieces) EXPECT_TRUE(r.Feed(p, &events)) << r.error();
  return events;
}

// The stream a kvengine server sends: JSON chunks (one line each), then [DONE].
const std::string kStream =
    "data: {\"choices\":[{\"text\":\"a\",\"token_ids\":[300]}]}\n\n"
    "data: {\"choices\":[{\"text\":\"\\u00e9\\n\",\"token_ids\":[301,302]}]}\n\n"
    ": a comment\n\n"
    "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n"
    "data: [DONE]\n\n";
const std::vector<std::string> kEvents = {
    "{\"choices\":[{\"text\":\"a\",\"token_ids\":[300]}]}",
    "{\"choices\":[{\"text\":\"\\u00e9\\n\",\"token_ids\":[301,302]}]}",
    "{\"choices\":[],\"usage\":{\"completion_tokens\":3}}",
    "[DONE]",
};

TEST(SseReaderTest, WholeStream) {
  SseReader r;
  EXPECT_EQ(FeedAll(r, {kStream}), kEvents);
  EXPECT_FALSE(r.pending());
}

TEST(SseReaderTest, RandomSplitsGiveTheSameEvents) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::string> pieces;
    size_t pos = 0;
    while (pos < kStream.size()) {
      const size_t n = 1 + rng() % 12;  // Pieces of 1-12 bytes: splits land everywhere.
      pieces.push_back(kStream.substr(pos, n));
      pos += n;
    }
    SseReader r;
    ASSERT_EQ(FeedAll(r, pieces), kEvents) << "trial " << trial;
  }
}

TEST(SseReaderTest, LineEndingsAndFields) {
  // CRLF and lone CR line ends (a CRLF split between pieces), several data lines joined with
  // "\n", "data:" without a space, other fields ignored, an event without data dropped.
  SseReader r;
  const std::vector<std::string> events =
      FeedAll(r, {"event: x\r\ndata: one\r", "\ndata:two\r\r", "id: 5\n\nretry: 10\ndata\n\n"});
  EXPECT_EQ(events, (std::vector<std::string>{"one\ntwo", ""}));
}

TEST(SseReaderTest, UnfinishedEventIsPending) {
  SseReader r;
  std::vector<std::string> events;
  ASSERT_TRUE(r.Feed("data: {\"a\"", &events));
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(r.pending());
  ASSERT_TRUE(r.Feed(":1}\n", &events));
  EXPECT_TRUE(r.pending());  // The blank line has not come yet.
  ASSERT_TRUE(r.Feed("\n", &events));
  EXPECT_EQ(events, std::vector<std::string>{"{\"a\":1}"});
  EXPECT_FALSE(r.pending());
}

TEST(SseReaderTest, OversizedEventIsAnError) {
  SseReader r(/*max_event_bytes=*/16);
  std::vector<std::string> events;
  EXPECT_TRUE(r.Feed("data: 0123456789\n", &events));
  EXPECT_FALSE(r.Feed("data: more\n", &events));  // 16 bytes of data + this line.
  EXPECT_NE(r.error().find("exceeds 16 bytes"), std::string::npos);
  EXPECT_FALSE(r.Feed("\n\n", &events));  // Nothing more is parsed.
  EXPECT_TRUE(events.empty());
}

TEST(SseReaderTest, CorruptedStreamsNeverCrash) {
  // Cut and corrupted streams: events come out or not, chunk parsing answers kData, kDone or
  // kError, and nothing reads out of bounds (the ASan build checks that).
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s = kStream.substr(0, rng() % (kStream.size() + 1));
    for (int k = int(rng() % 4); k > 0 && !s.empty(); --k) {
      s[rng() % s.size()] = "\r\n:{}[]\"\\,0-9a\xff"[rng() % 15];
    }
    SseReader r(/*max_event_bytes=*/64);
    std::vector<std::string> events;
    r.Feed(s, &events);
    for (const std::string& e : events) {
      const CompletionChunk c = ParseCompletionChunk(e);
      EXPECT_GE(c.tokens, 0);
      if (c.kind != CompletionChunk::Kind::kData) {
        EXPECT_EQ(c.tokens, 0);
      }
    }
  }
}

}  // namespace
}  // namespace kvengine::loadgen
