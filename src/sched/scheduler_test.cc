// Scheduler without a model: chunked prefill under the token budget, decodes before prefills'
// budget, max_num_seqs seats, prefix-cached tokens not recomputed, forks and removal.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "sched/sched_test_util.h"

namespace kvengine {
namespace {

using sched_test::FakeScheduler;
using sched_test::kBlock;
using sched_test::MakeFakeKv;
using sched_test::Opts;
using sched_test::Toks;
using sched_test::UsedBlocks;

TEST(SchedulerTest, OptionsAreValidated) {
  EXPECT_FALSE(Opts(0, 8).Validate().ok());
  EXPECT_FALSE(Opts(8, 4).Validate().ok());
  EXPECT_TRUE(Opts(4, 4).Validate().ok());
}

TEST(SchedulerTest, LongPromptIsChunkedUnderTheTokenBudget) {
  FakeScheduler h(MakeFakeKv(64), Opts(4, 8));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 20), 3);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int step = 0; step < 3; ++step) {
    const SchedulerOutput out = loop.Step();
    ASSERT_EQ(out.chunks.size(), 1u);
    chunks.emplace_back(out.chunks[0].start_pos, out.chunks[0].num_tokens);
    EXPECT_EQ(out.chunks[0].samples, step == 2);
    EXPECT_EQ(out.chunks[0].admitted, step == 0);
  }
  EXPECT_EQ(chunks, (std::vector<std::pair<int64_t, int64_t>>{{0, 8}, {8, 8}, {16, 4}}));
  // Then one token per step.
  const SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].start_pos, 20);
  EXPECT_EQ(out.chunks[0].num_tokens, 1);
  loop.RunToIdle();
  EXPECT_EQ(UsedBlocks(*kv), 0);
}

TEST(SchedulerTest, DecodesKeepTheirShareWhileAPrefillIsChunked) {
  FakeScheduler h(MakeFakeKv(64), Opts(4, 8));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 3), 50);
  loop.Step();  // Prefill of 1, which now decodes.
  // A higher-priority long prompt comes first in service order, yet leaves one token of every
  // step to the decode behind it.
  loop.Add(2, Toks(100, 30), 2, /*priority=*/1);
  SchedulerOutput first = loop.Step();  // Running sequences first, then the admission.
  ASSERT_EQ(first.chunks.size(), 2u);
  EXPECT_EQ(first.chunks[0].seq, 1u);
  EXPECT_EQ(first.chunks[1].seq, 2u);
  EXPECT_EQ(first.chunks[1].num_tokens, 7);
  for (int step = 0; step < 3; ++step) {
    const SchedulerOutput out = loop.Step();
    ASSERT_EQ(out.chunks.size(), 2u) << "step " << step;
    EXPECT_EQ(out.chunks[0].seq, 2u);
    EXPECT_EQ(out.chunks[1].seq, 1u);
    EXPECT_EQ(out.chunks[1].num_tokens, 1);
    EXPECT_EQ(out.num_tokens, std::min<int64_t>(8, out.chunks[0].num_tokens + 1));
  }
  EXPECT_EQ(sched.Find(2)->num_computed, 7 + 7 + 7 + 7);
}

TEST(SchedulerTest, PrefillFirstRunsPromptWorkAloneThenTheDecodes) {
  SchedulerOptions o = Opts(4, 8);
  o.step_policy = StepPolicy::kPrefillFirst;
  FakeScheduler h(MakeFakeKv(64), o);
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 3), 50);
  loop.Step();  // Prefill of 1, which now decodes.
  SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 1u);  // Nothing else to do: a decode step.
  EXPECT_EQ(out.chunks[0].seq, 1u);
  // A long prompt arrives: its chunks run alone (a mixed step would give 1 a token of each);
  // 1 decodes again once the prompt is done.
  loop.Add(2, Toks(100, 20), 2);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int step = 0; step < 3; ++step) {
    out = loop.Step();
    ASSERT_EQ(out.chunks.size(), 1u) << "step " << step;
    EXPECT_EQ(out.chunks[0].seq, 2u);
    chunks.emplace_back(out.chunks[0].start_pos, out.chunks[0].num_tokens);
  }
  EXPECT_EQ(chunks, (std::vector<std::pair<int64_t, int64_t>>{{0, 8}, {8, 8}, {16, 4}}));
  out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].num_tokens + out.chunks[1].num_tokens, 2);
  loop.RunToIdle();
  EXPECT_EQ(UsedBlocks(*kv), 0);
}

TEST(SchedulerTest, MixedStepsGiveDecodesTheirTokenBesideANewPrompt) {
  FakeScheduler h(MakeFakeKv(64), Opts(4, 8));  // StepPolicy::kMixed, the default.
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 3), 50);
  loop.Step();
  loop.Add(2, Toks(100, 5), 2);
  const SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[0].seq, 1u);
  EXPECT_EQ(out.chunks[0].num_tokens, 1);
  EXPECT_EQ(out.chunks[1].seq, 2u);
  EXPECT_EQ(out.chunks[1].num_tokens, 5);
}

TEST(SchedulerTest, PrefillChunkShrinksToTheBlocksLeft) {
  FakeScheduler h(MakeFakeKv(5), Opts(4, 8));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 8), 50);  // Two blocks, then decodes into a third.
  clock.Advance(1);
  loop.Add(2, Toks(100, 18), 2);
  loop.Step();  // 1's prompt takes the whole budget.
  SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].num_tokens, 7);  // Admitted: 2 blocks, the pool is full.
  // Position 7 fills 2's second block; the next chunk would need two more blocks and none is
  // left, so it shrinks to that one token rather than preempting anyone.
  out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].seq, 2u);
  EXPECT_EQ(out.chunks[1].start_pos, 7);
  EXPECT_EQ(out.chunks[1].num_tokens, 1);
  EXPECT_TRUE(out.preempted.empty());
  // Now nothing fits: 2, last in service order, is preempted.
  out = loop.Step();
  EXPECT_EQ(out.preempted, std::vector<SeqId>{2});
}

TEST(SchedulerTest, MaxNumSeqsLimitsRunningSeats) {
  FakeScheduler h(MakeFakeKv(64), Opts(3, 64));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 4), 4);
  loop.Add(2, Toks(10, 4), 20, 0, /*seats=*/2);
  loop.Add(3, Toks(20, 4), 4);
  loop.Step();
  EXPECT_EQ(sched.RunningIds(), (std::vector<SeqId>{1, 2}));
  EXPECT_EQ(sched.seats_running(), 3);
  EXPECT_EQ(sched.WaitingIds(), (std::vector<SeqId>{3}));
  // Sequence 1 ends after its 4 tokens; its seat goes to 3.
  while (sched.Find(1) != nullptr) loop.Step();
  loop.Step();
  EXPECT_EQ(sched.RunningIds(), (std::vector<SeqId>{2, 3}));
  loop.RunToIdle();
  EXPECT_EQ(UsedBlocks(*kv), 0);
}

TEST(SchedulerTest, AdmissionLeavesTheWatermarkForRunningSequences) {
  for (const double watermark : {0.0, 0.2}) {
    SCOPED_TRACE(watermark);
    SchedulerOptions o = Opts(8, 64);
    o.admission_watermark = watermark;  // 0.2 of 10 blocks: 2 kept available.
    FakeScheduler h(MakeFakeKv(10), o);
    auto& [kv, clock, sched, loop] = h;
    loop.Add(1, Toks(1, 8), 4);    // 2 blocks; nothing runs yet, so no watermark applies.
    loop.Add(2, Toks(100, 20), 4);  // 5 blocks: 8 available, 5 + 2 <= 8.
    loop.Add(3, Toks(200, 8), 4);  // 2 blocks: 3 available, 2 + 2 > 3 under the watermark.
    loop.Step();
    if (watermark == 0) {
      EXPECT_EQ(sched.RunningIds(), (std::vector<SeqId>{1, 2, 3}));
    } else {
      EXPECT_EQ(sched.RunningIds(), (std::vector<SeqId>{1, 2}));
      EXPECT_EQ(sched.WaitingIds(), (std::vector<SeqId>{3}));
    }
    loop.RunToIdle();
    EXPECT_EQ(loop.finished().size(), 3u);
    EXPECT_EQ(UsedBlocks(*kv), 0);
  }
}

TEST(SchedulerTest, WatermarkOutsideZeroToOneIsRejected) {
  SchedulerOptions o = Opts(4, 64);
  o.admission_watermark = 1.0;
  EXPECT_FALSE(o.Validate().ok());
  o.admission_watermark = -0.1;
  EXPECT_FALSE(o.Validate().ok());
}

TEST(SchedulerTest, AdmissionIsFirstComeFirstServedWithinAPriority) {
  FakeScheduler h(MakeFakeKv(64), Opts(1, 64));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 4), 2);
  clock.Advance(10);
  loop.Add(2, Toks(10, 4), 2);
  clock.Advance(10);
  loop.Add(3, Toks(20, 4), 2, /*priority=*/5);
  loop.RunToIdle();
  EXPECT_EQ(loop.finished(), (std::vector<SeqId>{3, 1, 2}));
}

TEST(SchedulerTest, PrefixCachedTokensAreNotRecomputed) {
  FakeScheduler h(MakeFakeKv(64), Opts(4, 64));
  auto& [kv, clock, sched, loop] = h;
  std::vector<int32_t> shared = Toks(1, 18);  // 4 full blocks + 2 tokens.
  loop.Add(1, shared, 2);
  loop.RunToIdle();
  // Same 16-token prefix, different tail: 4 blocks come from the cache.
  std::vector<int32_t> other = Toks(1, 16);
  other.push_back(500);
  loop.Add(2, other, 2);
  SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_TRUE(out.chunks[0].admitted);
  EXPECT_EQ(out.chunks[0].start_pos, 16);
  EXPECT_EQ(out.chunks[0].num_tokens, 1);
  EXPECT_EQ(sched.Find(2)->first_cached_tokens, 16);
  // The whole prompt cached: the last block still runs one token (its logits are needed).
  loop.Add(3, Toks(1, 16), 2);
  out = loop.Step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].seq, 3u);
  EXPECT_EQ(out.chunks[1].start_pos, 12);
  EXPECT_EQ(out.chunks[1].num_tokens, 4);
  loop.RunToIdle();
  EXPECT_EQ(UsedBlocks(*kv), 0);
  EXPECT_EQ(kv->Stats().prefix_hit_tokens, 16 + 12);
}

TEST(SchedulerTest, ForkSharesBlocksAndMovesSeats) {
  auto kv = MakeFakeKv(64);
  ManualClock clock;
  Scheduler sched(kv.get(), Opts(4, 64), &clock);
  NewSequence s;
  s.id = 1;
  s.prompt = Toks(1, 10);
  s.seats = 3;
  ASSERT_TRUE(sched.Add(s).ok());
  SchedulerOutput out = sched.Schedule();
  EXPECT_FALSE(sched.Fork(1, 2).ok());  // Not computed yet.
  sched.Complete(out);
  ASSERT_TRUE(sched.Fork(1, 2).ok());
  ASSERT_TRUE(sched.Fork(1, 3).ok());
  EXPECT_EQ(sched.seats_running(), 3);
  EXPECT_EQ(sched.Find(1)->seats, 1);
  EXPECT_EQ(kv->Stats().groups[0].used_blocks, 3);  // ceil(10 / 4), shared by all three.
  EXPECT_EQ(kv->Stats().groups[0].shared_blocks, 3);
  for (SeqId id : {1, 2, 3}) sched.AppendToken(id, 200 + int32_t(id));
  out = sched.Schedule();
  ASSERT_EQ(out.chunks.size(), 3u);
  for (const ScheduledChunk& c : out.chunks) EXPECT_EQ(c.start_pos, 10);
  // Two of the three copy the shared partial block on their first write.
  EXPECT_EQ(kv->Stats().cow_copies, 2);
  sched.Complete(out);
  for (SeqId id : {1, 2, 3}) EXPECT_TRUE(sched.Remove(id));
  EXPECT_EQ(UsedBlocks(*kv), 0);
  EXPECT_EQ(sched.seats_running(), 0);
}

TEST(SchedulerTest, RemoveFreesBlocksInEveryState) {
  FakeScheduler h(MakeFakeKv(64), Opts(2, 8));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 20), 10);  // Prefilling for three steps.
  loop.Add(2, Toks(50, 3), 10);
  loop.Add(3, Toks(60, 3), 10);  // Waits for a seat.
  loop.Step();
  EXPECT_GT(UsedBlocks(*kv), 0);
  EXPECT_TRUE(sched.Remove(3));  // Waiting.
  EXPECT_TRUE(sched.Remove(1));  // Mid-prefill.
  loop.Step();
  loop.Step();
  EXPECT_EQ(sched.Find(2)->status, SeqStatus::kRunning);
  EXPECT_TRUE(sched.Remove(2));  // Decoding.
  EXPECT_FALSE(sched.Remove(2));
  EXPECT_TRUE(sched.idle());
  EXPECT_EQ(UsedBlocks(*kv), 0);
  EXPECT_EQ(sched.seats_running(), 0);
}

TEST(SchedulerTest, ContiguousReservationAdmitsOnlyFullLengthSeats) {
  // max_model_len 32 = 8 blocks per seat; 20 blocks hold two reservations.
  for (bool contiguous : {false, true}) {
    SCOPED_TRACE(contiguous ? "contiguous" : "paged");
    SchedulerOptions o = Opts(8, 64);
    o.contiguous_reservation = contiguous;
    FakeScheduler h(MakeFakeKv(20, /*max_model_len=*/32), o);
    auto& [kv, clock, sched, loop] = h;
    for (SeqId id = 1; id <= 4; ++id) loop.Add(id, Toks(int32_t(id) * 100, 5), 3);
    loop.Step();
    EXPECT_EQ(sched.num_running(), contiguous ? 2 : 4);
    EXPECT_EQ(sched.reserved_blocks_per_seat(0), 32 / kBlock);
    loop.RunToIdle();
    EXPECT_EQ(loop.finished().size(), 4u);
    EXPECT_EQ(sched.num_preemptions(), 0);
  }
}

}  // namespace
}  // namespace kvengine
