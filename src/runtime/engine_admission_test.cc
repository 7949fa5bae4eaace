// What Submit refuses up front and why, the waiting-queue limit, Stop, the capacity line, and the
// contiguous (max-length reservation) policy.
#include <gtest/gtest.h>

#include "planner/kv_plan.h"
#include "kvengine/engine.h"
#include "runtime/engine_internal.h"
#include "runtime/engine_test_util.h"

namespace kvengine {
namespace {

using namespace engine_test;  // NOLINT: test helpers.

RequestParams Simple(int prompt, int64_t max_tokens) {
  RequestParams p;
  p.prompt = Prompt(prompt);
  p.max_tokens = max_tokens;
  p.sampling = Greedy();
  return p;
}

Status SubmitStatus(Engine& e, const RequestParams& p) {
  auto r = e.Submit(p, [](const RequestEvent&) {});
  return r.ok() ? Status::Ok() : r.status();
}

TEST(EngineAdmissionTest, BadParametersAreRejectedUpFront) {
  auto engine = MakeEngine(TinyModel(), BaseOptions(64));
  RequestParams p = Simple(4, 4);
  p.prompt.clear();
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 4);
  p.prompt[2] = 512;  // The tiny vocabulary has 512 tokens.
  Status s = SubmitStatus(*engine, p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("prompt token 2 (id 512) is outside the vocabulary"),
            std::string::npos)
      << s.message();
  p = Simple(4, 4);
  p.prompt[0] = -1;
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 0);
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 4);
  p.n = 17;  // max_num_seqs is 16.
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 4);
  p.logprobs = kMaxLogprobs + 1;
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 4);
  p.sampling.top_p = 0;
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  p = Simple(4, 4);
  p.stop_token_ids = {9999};
  EXPECT_EQ(SubmitStatus(*engine, p).code(), StatusCode::kInvalidArgument);
  // Exactly the context is fine; one more is not.
  EXPECT_TRUE(SubmitStatus(*engine, Simple(500, 12)).ok());
  s = SubmitStatus(*engine, Simple(500, 13));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("exceed the context of 512 tokens"), std::string::npos) << s.message();
  EXPECT_EQ(engine->Stats().requests_rejected_total, 9);
}

TEST(EngineAdmissionTest, RequestBiggerThanThePoolSaysWhatWouldFit) {
  // 8 blocks of 16 tokens: 128 token slots, far below the 512-token context.
  auto engine = MakeEngine(TinyModel(), BaseOptions(8));
  EXPECT_TRUE(SubmitStatus(*engine, Simple(100, 28)).ok());
  const Status s = SubmitStatus(*engine, Simple(100, 100));
  ASSERT_EQ(s.code(), StatusCode::kOutOfRange);
  const std::string& m = s.message();
  EXPECT_NE(m.find("the request needs"), std::string::npos) << m;
  EXPECT_NE(m.find("13 blocks of 16 tokens"), std::string::npos) << m;
  EXPECT_NE(m.find("the KV pool holds"), std::string::npos) << m;
  EXPECT_NE(m.find("(8 blocks)"), std::string::npos) << m;
  EXPECT_NE(m.find("at most 128 tokens of prompt + max_tokens"), std::string::npos) << m;
  EXPECT_NE(m.find("of KV memory"), std::string::npos) << m;
  // 256 bytes/token in f16; int8 with its scales is 144: 14 blocks in the same memory.
  EXPECT_NE(m.find("int8 KV (144 bytes/token)"), std::string::npos) << m;
  // n choices multiply the tokens beyond the shared prompt.
  RequestParams p = Simple(100, 20);
  p.n = 4;
  const Status sn = SubmitStatus(*engine, p);
  ASSERT_EQ(sn.code(), StatusCode::kOutOfRange);
  EXPECT_NE(sn.message().find("n of at most"), std::string::npos) << sn.message();
}

TEST(EngineAdmissionTest, FullQueueIsUnavailableAndStopCancelsTheQueued) {
  EventLog log;
  EngineOptions o = BaseOptions(64);
  o.sched.max_num_seqs = 1;
  o.max_queued_requests = 1;
  auto engine = MakeEngine(TinyModel(), o);  // Not started: requests stay queued.
  auto a = engine->Submit(Simple(4, 4), log.Callback());  // Takes the one seat.
  auto b = engine->Submit(Simple(4, 4), log.Callback());  // Waits.
  ASSERT_TRUE(a.ok() && b.ok());
  const Status full = SubmitStatus(*engine, Simple(4, 4));
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_NE(full.message().find("queue is full (no free seat of 1, 1 requests waiting"),
            std::string::npos)
      << full.message();
  EXPECT_EQ(engine->Stats().requests_waiting, 2);
  engine->Stop();
  for (RequestId id : {*a, *b}) {
    const auto finals = log.Finals(id);
    ASSERT_EQ(finals.size(), 1u);
    EXPECT_EQ(finals[0].finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(finals[0].completion_tokens, 0);
  }
  EXPECT_EQ(SubmitStatus(*engine, Simple(4, 4)).code(), StatusCode::kUnavailable);
  const EngineStats s = engine->Stats();
  EXPECT_EQ(s.requests_cancelled_total, 2);
  EXPECT_EQ(s.requests_waiting, 0);
  EXPECT_EQ(UsedBlocks(s), 0);
  engine->Stop();  // Idempotent.
}

TEST(EngineAdmissionTest, QueueLimitCountsOnlyRequestsBeyondTheFreeSeats) {
  using engine_internal::WaitingWith;
  // 4 seats, all free: the first 4 requests (n = 1) run at once, the 5th is the first to wait.
  EXPECT_EQ(WaitingWith(0, 0, 0, 1, 4), 0);
  EXPECT_EQ(WaitingWith(3, 3, 0, 1, 4), 0);
  EXPECT_EQ(WaitingWith(4, 4, 0, 1, 4), 1);
  EXPECT_EQ(WaitingWith(7, 7, 0, 1, 4), 4);
  // Seats held by running requests are not free; a request of n choices needs n seats.
  EXPECT_EQ(WaitingWith(0, 0, 4, 1, 4), 1);
  EXPECT_EQ(WaitingWith(1, 1, 2, 1, 4), 0);
  EXPECT_EQ(WaitingWith(0, 0, 2, 4, 4), 1);
  EXPECT_EQ(WaitingWith(1, 4, 0, 4, 4), 1);
  // More running than seats (n > 1 forks): nothing is free, nothing goes negative.
  EXPECT_EQ(WaitingWith(2, 2, 6, 1, 4), 3);
}

TEST(EngineAdmissionTest, BurstOfTwiceTheSeatsFitsSeatsPlusQueue) {
  // max_num_seqs 4, max_queued_requests 4, a burst of 8 before the loop runs a step: 4 take the
  // free seats and 4 wait, so all 8 are accepted; the 9th would be the 5th waiting.
  EventLog log;
  EngineOptions o = BaseOptions(64);
  o.sched.max_num_seqs = 4;
  o.max_queued_requests = 4;
  auto engine = MakeEngine(TinyModel(), o);  // Not started: a burst the loop has not seen.
  std::vector<RequestId> ids;
  for (int i = 0; i < 8; ++i) {
    RequestParams p = Simple(6, 4);
    p.prompt[1] = 100 + i;
    auto id = engine->Submit(p, log.Callback());
    ASSERT_TRUE(id.ok()) << "request " << i << ": " << id.status().ToString();
    ids.push_back(*id);
  }
  EXPECT_EQ(SubmitStatus(*engine, Simple(4, 4)).code(), StatusCode::kUnavailable);
  engine->Start();
  for (RequestId id : ids) ASSERT_TRUE(log.WaitFinals(id, 1));
  for (RequestId id : ids) EXPECT_EQ(log.Finals(id)[0].finish_reason, FinishReason::kLength);
  // The same burst against the running, idle engine: all accepted again.
  ids.clear();
  for (int i = 0; i < 8; ++i) {
    auto id = engine->Submit(Simple(6, 4), log.Callback());
    ASSERT_TRUE(id.ok()) << "request " << i << ": " << id.status().ToString();
    ids.push_back(*id);
  }
  for (RequestId id : ids) ASSERT_TRUE(log.WaitFinals(id, 1));
  EXPECT_EQ(engine->Stats().requests_rejected_total, 1);
}

TEST(EngineAdmissionTest, ZeroQueueAcceptsWhileASeatIsFree) {
  // max_queued_requests 0: no waiting queue. A request is accepted while a seat is free for it
  // (an idle engine accepts max_num_seqs at once) and refused only when none is.
  EventLog log;
  EngineOptions o = BaseOptions(64);
  o.sched.max_num_seqs = 2;
  o.max_queued_requests = 0;
  auto engine = MakeEngine(TinyModel(), o);
  auto a = engine->Submit(Simple(4, 4), log.Callback());
  auto b = engine->Submit(Simple(5, 4), log.Callback());
  ASSERT_TRUE(a.ok() && b.ok());
  const Status full = SubmitStatus(*engine, Simple(4, 4));
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_NE(full.message().find("max_queued_requests 0"), std::string::npos) << full.message();
  RequestParams two = Simple(4, 4);
  two.n = 2;  // Needs both seats.
  engine->Start();
  ASSERT_TRUE(log.WaitFinals(*a, 1) && log.WaitFinals(*b, 1));
  // Finished requests give their seats back (the stats are published before the events).
  auto c = engine->Submit(two, log.Callback());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(log.WaitFinals(*c, 2));
  EXPECT_EQ(engine->Stats().requests_rejected_total, 1);
}

TEST(EngineAdmissionTest, CapacityLineAgreesWithThePlanner) {
  auto model = TinyModel();
  EngineOptions o = BaseOptions(0);
  o.kv.num_blocks = 0;
  o.kv.memory_bytes = 1 << 20;
  auto engine = MakeEngine(model, o);
  PlanOptions po;
  po.ctx = 512;
  po.block_size = 16;
  po.memory_bytes = 1 << 20;
  auto plan = PlanKv(model->config(), UniformDtypes(KvDtype::kF16), po);
  ASSERT_TRUE(plan.ok());
  const std::string line = engine->DescribeCapacity();
  EXPECT_EQ(line.rfind(
                "KV pool " + std::to_string(plan->groups[0].num_blocks) + " blocks x 16 tokens", 0),
            0u)
      << line;
  EXPECT_NE(line.find("(f16), " + std::to_string(plan->kv_bytes_per_token) + " bytes/token"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("max " + std::to_string(plan->max_sequences) +
                      " concurrent sequences at max_model_len 512"),
            std::string::npos)
      << line;
}

TEST(EngineAdmissionTest, ContiguousPolicyReservesMaxLengthAndKeepsResults) {
  auto model = TinyModel();
  EventLog log;
  // max_model_len 128 = 8 blocks per sequence: 32 blocks reserve 4 sequences.
  EngineOptions o = BaseOptions(32, 128);
  o.sched.contiguous_reservation = true;
  auto engine = MakeEngine(model, o);
  EXPECT_NE(engine->DescribeCapacity().find("max 4 concurrent"), std::string::npos);
  RequestParams big = Simple(10, 10);
  big.n = 5;  // Five reservations never fit.
  EXPECT_EQ(SubmitStatus(*engine, big).code(), StatusCode::kOutOfRange);
  std::vector<std::pair<RequestId, RequestParams>> reqs;
  for (int i = 0; i < 8; ++i) {
    RequestParams p = Simple(5 + 3 * i, 12);
    p.prompt[1] = 100 + i;  // No shared prefix.
    auto id = engine->Submit(p, log.Callback());
    ASSERT_TRUE(id.ok());
    reqs.emplace_back(*id, p);
  }
  engine->Start();
  int64_t peak = 0;
  for (auto& [id, p] : reqs) {
    while (!log.WaitFinals(id, 1, 0.001)) peak = std::max(peak, engine->Stats().requests_running);
    EXPECT_EQ(log.Tokens(id), RunAlone(*model, p));
  }
  EXPECT_LE(peak, 4);
  EXPECT_EQ(engine->Stats().preemptions_total, 0);
}

}  // namespace
}  // namespace kvengine
