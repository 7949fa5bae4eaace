// Cancellation in every state (queued, prefilling, decoding, preempted) frees the blocks within a
// step and ends each choice with exactly one kCancelled event; preemption in a tiny pool still
// yields exactly the tokens of running alone.
#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "kvengine/engine.h"
#include "runtime/engine_test_util.h"

namespace kvengine {
namespace {

using namespace engine_test;  // NOLINT: test helpers.

void ExpectCancelledOnce(EventLog& log, RequestId id, int choices = 1) {
  ASSERT_TRUE(log.WaitFinals(id, choices));
  const auto finals = log.Finals(id);
  ASSERT_EQ(finals.size(), size_t(choices));
  for (const RequestEvent& f : finals) EXPECT_EQ(f.finish_reason, FinishReason::kCancelled);
}

void ExpectNoBlocksInUse(Engine& engine) {
  EXPECT_TRUE(WaitUntil(
      [&] {
        const EngineStats s = engine.Stats();
        return s.requests_running == 0 && s.requests_waiting == 0 && UsedBlocks(s) == 0;
      },
      10))
      << "used blocks " << UsedBlocks(engine.Stats());
}

// Each test cancels from inside another request's event callback (Cancel only queues), at a
// token count where the victim's state is certain: the loop applies the cancellation at the
// start of the next iteration.

// Calls `at_token(k)` after logging each token event; k counts the request's token events.
EventCallback Trigger(EventLog& log, std::function<void(int)> at_token) {
  auto count = std::make_shared<int>(0);
  return [cb = log.Callback(), at_token = std::move(at_token), count](const RequestEvent& e) {
    cb(e);
    if (e.has_token) at_token(++*count);
  };
}

// A greedy request of 20 prompt tokens for `n` choices of up to `max_tokens` each.
RequestParams Choices(int n, int64_t max_tokens) {
  RequestParams p = GreedyRequest(20, max_tokens);
  p.n = n;
  return p;
}

// Submits Choices(n, max_tokens) with Trigger(log, at_token), sets `*id` (which at_token may
// read) and starts the engine.
void SubmitChoicesAndStart(Engine& engine, EventLog& log, int n, int64_t max_tokens, RequestId* id,
                           std::function<void(int)> at_token) {
  auto r = engine.Submit(Choices(n, max_tokens), Trigger(log, std::move(at_token)));
  ASSERT_TRUE(r.ok());
  *id = *r;
  engine.Start();
}

TEST(EngineCancelTest, CancelWhileQueued) {
  EventLog log;
  EngineOptions o = BaseOptions(64);
  o.sched.max_num_seqs = 1;
  auto engine = MakeEngine(TinyModel(), o);
  RequestId queued = 0;
  size_t waiting_seen = 0;
  // `busy` holds the only seat until it ends, so `queued` waits the whole time.
  auto busy = engine->Submit(GreedyRequest(8, 40), Trigger(log, [&](int k) {
                               if (k != 5) return;
                               waiting_seen = size_t(engine->Stats().requests_waiting);
                               engine->Cancel(queued);
                             }));
  auto q = engine->Submit(GreedyRequest(8, 10, 1), log.Callback());
  ASSERT_TRUE(busy.ok() && q.ok());
  queued = *q;
  engine->Start();
  ExpectCancelledOnce(log, queued);
  EXPECT_EQ(waiting_seen, 1u);
  EXPECT_TRUE(log.Tokens(queued).empty());
  EXPECT_EQ(log.Finals(queued)[0].completion_tokens, 0);
  EXPECT_EQ(log.Finals(queued)[0].prompt_tokens, 8);
  ASSERT_TRUE(log.WaitFinals(*busy, 1));
  EXPECT_EQ(log.Finals(*busy)[0].finish_reason, FinishReason::kLength);
  engine->Cancel(*busy);      // Finished: ignored.
  engine->Cancel(queued);     // Twice: still one final event.
  engine->Cancel(987654321);  // Unknown: ignored.
  ExpectNoBlocksInUse(*engine);
  EXPECT_EQ(log.Finals(queued).size(), 1u);
  EXPECT_EQ(log.Finals(*busy).size(), 1u);
  EXPECT_EQ(engine->Stats().requests_cancelled_total, 1);
  EXPECT_EQ(engine->Stats().requests_finished_total, 1);
}

TEST(EngineCancelTest, CancelWhilePrefilling) {
  EventLog log;
  EngineOptions o = BaseOptions(64);
  o.sched.max_num_seqs = 8;
  o.sched.max_num_batched_tokens = 8;  // The decode takes 1 token a step, the prefill 7.
  auto engine = MakeEngine(TinyModel(), o);
  RequestId long_id = 0;
  int64_t used_before = 0;
  auto decoder = engine->Submit(GreedyRequest(4, 30), Trigger(log, [&](int k) {
                                  if (k != 10) return;  // The 500-token prompt is ~70 tokens in.
                                  used_before = UsedBlocks(engine->Stats());
                                  engine->Cancel(long_id);
                                }));
  auto prefill = engine->Submit(GreedyRequest(500, 4, 1), log.Callback());
  ASSERT_TRUE(decoder.ok() && prefill.ok());
  long_id = *prefill;
  engine->Start();
  ExpectCancelledOnce(log, long_id);
  EXPECT_TRUE(log.Tokens(long_id).empty());
  EXPECT_GE(used_before, 5);  // 1 block of the decoder + 4+ of the prefill.
  ASSERT_TRUE(log.WaitFinals(*decoder, 1));
  ExpectNoBlocksInUse(*engine);
}

TEST(EngineCancelTest, CancelWhileDecodingWithChoices) {
  EventLog log;
  auto engine = MakeEngine(TinyModel(), BaseOptions(64));
  RequestId id = 0;
  ASSERT_NO_FATAL_FAILURE(SubmitChoicesAndStart(*engine, log, 2, 400, &id, [&](int k) {
    if (k == 6) engine->Cancel(id);
  }));
  ExpectCancelledOnce(log, id, 2);
  for (const RequestEvent& f : log.Finals(id)) {
    EXPECT_EQ(f.completion_tokens, 3);  // Both choices sample in each step.
    EXPECT_EQ(f.prompt_tokens, 20);
  }
  ExpectNothingAfterFinal(log.Events(id), 2);
  ExpectNoBlocksInUse(*engine);
}

// A double cancel (the server cancels at a stop string while the client disconnects): both
// calls land in one batch of the loop, which is inside a callback when they are made. Each
// choice still ends with one kCancelled event and the request counts as cancelled once.
TEST(EngineCancelTest, CancelTwiceInOneStep) {
  EventLog log;
  auto engine = MakeEngine(TinyModel(), BaseOptions(64));
  RequestId id = 0;
  ASSERT_NO_FATAL_FAILURE(SubmitChoicesAndStart(*engine, log, 2, 400, &id, [&](int k) {
    if (k != 4) return;
    engine->Cancel(id);
    engine->Cancel(id);
  }));
  ExpectCancelledOnce(log, id, 2);
  ExpectNoBlocksInUse(*engine);
  engine->Cancel(id);  // A third one, in a later batch: ignored as well.
  auto other = engine->Submit(GreedyRequest(8, 4, 1), log.Callback());  // A full pass of the loop.
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(log.WaitFinals(*other, 1));
  EXPECT_EQ(log.Finals(id).size(), 2u);
  EXPECT_EQ(engine->Stats().requests_cancelled_total, 1);
  EXPECT_EQ(engine->Stats().requests_finished_total, 1);
}

TEST(EngineCancelTest, StopChoiceEndsOneChoiceAndTheOthersGoOn) {
  EventLog log;
  auto engine = MakeEngine(TinyModel(), BaseOptions(64));
  RequestId id = 0;
  ASSERT_NO_FATAL_FAILURE(SubmitChoicesAndStart(*engine, log, 3, 12, &id, [&](int k) {
    engine->StopChoice(id, 1);  // Before the fork: ignored (no token).
    if (k == 4) {               // Choices 0 and 1 have 2 tokens each.
      engine->StopChoice(id, 1);
      engine->StopChoice(id, 1);  // Twice: still one final event.
      engine->StopChoice(id, 7);  // Out of range: ignored.
    }
  }));
  ASSERT_TRUE(log.WaitFinals(id, 3));
  const auto finals = log.Finals(id);
  ASSERT_EQ(finals.size(), 3u);
  for (const RequestEvent& f : finals) {
    if (f.choice == 1) {
      EXPECT_EQ(f.finish_reason, FinishReason::kStop);
      EXPECT_LT(f.completion_tokens, 12);
    } else {
      EXPECT_EQ(f.finish_reason, FinishReason::kLength);
      EXPECT_EQ(f.completion_tokens, 12);
    }
  }
  // The stopped choice's tokens are a prefix of running alone; the others are all of it.
  ExpectNothingAfterFinal(log.Events(id), 3);
  const std::vector<int32_t> alone = RunAlone(*TinyModel(), Choices(3, 12), 0);
  EXPECT_EQ(log.Tokens(id, 0), alone);
  ExpectNoBlocksInUse(*engine);
  EXPECT_EQ(engine->Stats().requests_finished_total, 1);
}

TEST(EngineCancelTest, CancelWhilePreempted) {
  auto model = TinyModel();
  EventLog log;
  // 10 blocks. A (high priority) grows to all 10 (160 tokens); B's 60-token prompt plus A's
  // growth collide after ~40 tokens each, B is preempted and cannot come back while A runs: it
  // needs at least 7 blocks and A holds more than 3 from then on.
  EngineOptions o = BaseOptions(10);
  o.sched.max_num_batched_tokens = 512;
  auto engine = MakeEngine(model, o);
  RequestParams a = GreedyRequest(20, 140);
  a.priority = 1;
  RequestParams b = GreedyRequest(60, 60, 1);
  RequestId idb = 0;
  size_t b_tokens = 0;
  EngineStats at_cancel;
  auto ida = engine->Submit(a, Trigger(log, [&](int k) {
                              if (k != 100) return;
                              at_cancel = engine->Stats();
                              b_tokens = log.Tokens(idb).size();
                              engine->Cancel(idb);
                            }));
  auto rb = engine->Submit(b, log.Callback());
  ASSERT_TRUE(ida.ok() && rb.ok());
  idb = *rb;
  engine->Start();
  ExpectCancelledOnce(log, idb);
  EXPECT_EQ(at_cancel.preemptions_total, 1);
  EXPECT_EQ(at_cancel.requests_waiting, 1);
  EXPECT_EQ(at_cancel.requests_running, 1);
  EXPECT_GT(b_tokens, 0u);
  EXPECT_LT(b_tokens, 60u);
  EXPECT_EQ(log.Tokens(idb).size(), b_tokens);
  EXPECT_EQ(log.Finals(idb)[0].completion_tokens, int64_t(b_tokens));
  ASSERT_TRUE(log.WaitFinals(*ida, 1));
  EXPECT_EQ(log.Tokens(*ida), RunAlone(*model, a));
  ExpectNoBlocksInUse(*engine);
}

void RunPreemptedAndCompare(std::shared_ptr<const Model> model) {
  EventLog log;
  // 12 blocks = 192 token slots for six requests of up to ~140 tokens each.
  EngineOptions o = BaseOptions(12);
  o.sched.max_num_batched_tokens = 32;
  auto engine = MakeEngine(model, o);
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 6; ++i) {
    RequestParams p = GreedyRequest(10 + 13 * i, 40 + 5 * i, i);
    p.ignore_eos = i % 2 == 1;
    p.priority = i % 3 == 0 ? 1 : 0;
    reqs.push_back(p);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameTokensAsAlone(*engine, log, *model, reqs));
  ExpectNoBlocksInUse(*engine);
  const EngineStats s = engine->Stats();
  EXPECT_GT(s.preemptions_total, 0);
  EXPECT_GT(s.recomputed_tokens_total, 0);
  EXPECT_EQ(s.requests_finished_total, 6);
}

TEST(EngineCancelTest, PreemptionInATinyPoolGivesTheSameTokens) {
  RunPreemptedAndCompare(TinyModel());
}

TEST(EngineCancelTest, PreemptionInATinyPoolGivesTheSameTokensOnStories260K) {
  KV_REQUIRE_MODEL(StoriesPath());
  RunPreemptedAndCompare(StoriesModel());
}

}  // namespace
}  // namespace kvengine
