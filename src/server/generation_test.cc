#include "server/generation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/server_test_util.h"
#include "tokenizer/utf8.h"

namespace kvengine::server {
namespace {

RequestEvent Token(int choice, int32_t id) {
  RequestEvent e;
  e.choice = choice;
  e.has_token = true;
  e.token = id;
  e.logprob = -1.0f;
  e.top_logprobs = {{id, -1.0f}, {id + 1, -2.0f}, {id + 2, -3.0f}};
  return e;
}

RequestEvent Final(int choice, FinishReason r, int64_t completion, int64_t cached = 0) {
  RequestEvent e;
  e.choice = choice;
  e.finish_reason = r;
  e.prompt_tokens = 10;
  e.cached_prompt_tokens = cached;
  e.completion_tokens = completion;
  return e;
}

// Text of the deltas, per choice, and the finish reasons.
struct Collected {
  std::vector<std::string> text;
  std::vector<std::string> finish;
  std::vector<size_t> logprobs;
};

void Drain(Generation& g, Collected* c) {
  for (const ChoiceDelta& d : g.TakeDeltas()) {
    c->text[size_t(d.index)] += d.text;
    c->logprobs[size_t(d.index)] += d.logprobs.size();
    if (!d.finish_reason.empty()) c->finish[size_t(d.index)] = d.finish_reason;
  }
}

TEST(GenerationTest, DecodesAndFinishesByLength) {
  const Tokenizer& t = testing::TinyTokenizer();
  const std::vector<int32_t> ids = t.Encode("hello world", false);
  Generation g(t, 1, {}, -1, 5);
  Collected c{{""}, {""}, {0}};
  for (int32_t id : ids) g.Apply(Token(0, id));
  Drain(g, &c);
  EXPECT_FALSE(g.done());
  g.Apply(Final(0, FinishReason::kLength, int64_t(ids.size()), 4));
  Drain(g, &c);
  EXPECT_TRUE(g.done());
  EXPECT_TRUE(g.engine_done());
  EXPECT_EQ(c.text[0], " hello world");
  EXPECT_EQ(c.finish[0], "length");
  EXPECT_EQ(c.logprobs[0], 0u);
  const Usage u = g.usage();
  EXPECT_EQ(u.prompt_tokens, 10);
  EXPECT_EQ(u.cached_tokens, 4);
  EXPECT_EQ(u.completion_tokens, int64_t(ids.size()));
}

TEST(GenerationTest, StopStringEndsOneChoiceBeforeTheEngine) {
  const Tokenizer& t = testing::TinyTokenizer();
  const std::vector<int32_t> ids = t.Encode("one two three four", false);
  Generation g(t, 2, {" three"}, 2, 5);
  Collected c{{"", ""}, {"", ""}, {0, 0}};
  for (int32_t id : ids) g.Apply(Token(0, id));
  Drain(g, &c);
  EXPECT_EQ(c.text[0], " one two");
  EXPECT_EQ(c.finish[0], "stop");
  EXPECT_FALSE(g.done());  // Choice 1 still runs.
  EXPECT_EQ(g.TakeStringStops(), std::vector<int>{0});  // The engine must stop choice 0.
  EXPECT_TRUE(g.TakeStringStops().empty());
  g.Apply(Token(1, ids[0]));
  g.Apply(Final(1, FinishReason::kStop, 1));
  Drain(g, &c);
  EXPECT_TRUE(g.done());
  EXPECT_FALSE(g.engine_done());  // The engine never ended choice 0.
  EXPECT_EQ(c.text[1], " one");
  EXPECT_EQ(c.finish[1], "stop");
  EXPECT_TRUE(g.TakeStringStops().empty());  // The engine ended choice 1 itself.
  // Logprobs for every token received while the choice was open (up to the stop).
  EXPECT_GE(c.logprobs[0], 3u);
  EXPECT_EQ(c.logprobs[1], 1u);
  // The cancelled final event of choice 0 arrives late: usage counts our tokens for it.
  g.Apply(Final(0, FinishReason::kCancelled, 99, 8));
  EXPECT_TRUE(g.engine_done());
  EXPECT_FALSE(g.failure().has_value());
  EXPECT_EQ(g.usage().completion_tokens, int64_t(c.logprobs[0]) + 1);
  EXPECT_EQ(g.usage().cached_tokens, 8);
}

TEST(GenerationTest, SplitCharacterIsHeldUntilComplete) {
  const Tokenizer& t = testing::TinyTokenizer();
  // "€" as three byte tokens (the synthetic vocabulary has no piece for it).
  const std::vector<int32_t> ids = t.Encode("\xE2\x82\xAC", false);
  Generation g(t, 1, {}, 0, 1);
  Collected c{{""}, {""}, {0}};
  std::vector<std::string> seen;
  for (int32_t id : ids) {
    g.Apply(Token(0, id));
    for (const ChoiceDelta& d : g.TakeDeltas()) seen.push_back(d.text);
  }
  std::string all;
  for (const std::string& s : seen) all += s;
  EXPECT_EQ(all, " \xE2\x82\xAC");  // The tokenizer's space prefix, then the character.
  // No delta splits the character: each is valid UTF-8 on its own.
  for (const std::string& s : seen) EXPECT_TRUE(IsValidUtf8(s)) << s.size();
  EXPECT_GE(ids.size(), 3u);
}

TEST(GenerationTest, ErrorsAndCancellationAreFailures) {
  const Tokenizer& t = testing::TinyTokenizer();
  Generation g(t, 1, {}, -1, 1);
  RequestEvent e = Final(0, FinishReason::kError, 0);
  e.error = "boom";
  g.Apply(e);
  ASSERT_TRUE(g.failure().has_value());
  EXPECT_EQ(*g.failure(), "boom");
  EXPECT_FALSE(g.cancelled());
  EXPECT_TRUE(g.done());
  Generation h(t, 1, {}, -1, 1);
  h.Apply(Final(0, FinishReason::kCancelled, 0));
  EXPECT_TRUE(h.cancelled());
  // Events for choices that do not exist are ignored.
  Generation k(t, 1, {}, -1, 1);
  k.Apply(Token(5, 300));
  k.Apply(Token(-1, 300));
  EXPECT_TRUE(k.TakeDeltas().empty());
}

TEST(EventQueueTest, WaitPopTimesOutAndDelivers) {
  EventQueue q;
  std::vector<RequestEvent> out;
  EXPECT_FALSE(q.WaitPop(std::chrono::milliseconds(1), &out));
  q.Push(Token(0, 1));
  q.Push(Token(0, 2));
  EXPECT_TRUE(q.WaitPop(std::chrono::milliseconds(1), &out));
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace kvengine::server
