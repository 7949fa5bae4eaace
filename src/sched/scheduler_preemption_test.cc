// Scheduler under KV pressure: who is preempted, how a preempted sequence comes back, and a
// randomized workload whose results must not depend on the pool size.
#include <random>

#include <gtest/gtest.h>

#include "sched/sched_test_util.h"
#include "sched/scheduler.h"

namespace kvengine {
namespace {

using sched_test::FakeScheduler;
using sched_test::MakeFakeKv;
using sched_test::Opts;
using sched_test::Toks;
using sched_test::UsedBlocks;

// Two one-block prompts in a three-block pool: the step where both cross into a second block
// has room for one of them.
std::vector<SeqId> FirstPreemption(int priority_a, int priority_b) {
  FakeScheduler h(MakeFakeKv(3), Opts(4, 64));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 4), 8, priority_a);
  clock.Advance(5);
  loop.Add(2, Toks(10, 4), 8, priority_b);
  for (int step = 0; step < 4; ++step) {
    const SchedulerOutput out = loop.Step();
    if (!out.preempted.empty()) {
      EXPECT_EQ(sched.num_preemptions(), 1);
      EXPECT_EQ(sched.Find(out.preempted[0])->status, SeqStatus::kWaiting);
      EXPECT_EQ(sched.Find(out.preempted[0])->num_computed, 0);
      return out.preempted;
    }
  }
  return {};
}

TEST(SchedulerPreemptionTest, LatestArrivalGoesFirstAtEqualPriority) {
  EXPECT_EQ(FirstPreemption(0, 0), std::vector<SeqId>{2});
}

TEST(SchedulerPreemptionTest, LowestPriorityGoesFirst) {
  EXPECT_EQ(FirstPreemption(0, 1), std::vector<SeqId>{1});
  EXPECT_EQ(FirstPreemption(2, 1), std::vector<SeqId>{2});
}

TEST(SchedulerPreemptionTest, PreemptedSequenceResumesFromThePrefixCache) {
  // Four blocks: both sequences fill two, then the third block of sequence 2 does not fit.
  FakeScheduler h(MakeFakeKv(4), Opts(4, 64));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 4), 6);
  loop.Add(2, Toks(10, 4), 6);
  SeqId victim = 0;
  while (victim == 0) {
    const SchedulerOutput out = loop.Step();
    if (!out.preempted.empty()) victim = out.preempted[0];
  }
  ASSERT_EQ(victim, 2u);
  // Its blocks were released tail first, so sequence 1's next block evicted the second; when it
  // comes back, its first (full, computed) block is still in the prefix cache and only the
  // tokens after it run again.
  bool resumed = false;
  while (!sched.idle()) {
    const SchedulerOutput out = loop.Step();
    for (const ScheduledChunk& c : out.chunks) {
      if (c.seq == victim && c.admitted) {
        EXPECT_EQ(c.start_pos, 4);
        resumed = true;
      }
    }
  }
  EXPECT_TRUE(resumed);
  EXPECT_EQ(UsedBlocks(*kv), 0);
}

TEST(SchedulerPreemptionTest, NoAdmissionInAStepThatPreempted) {
  FakeScheduler h(MakeFakeKv(3), Opts(4, 64));
  auto& [kv, clock, sched, loop] = h;
  loop.Add(1, Toks(1, 4), 8);
  loop.Add(2, Toks(10, 4), 8);
  loop.Step();
  loop.Add(3, Toks(20, 1), 1);  // Would fit in a freed block.
  const SchedulerOutput out = loop.Step();
  ASSERT_EQ(out.preempted, std::vector<SeqId>{2});
  for (const ScheduledChunk& c : out.chunks) EXPECT_NE(c.seq, 3u);
}

struct Workload {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> max_new;
  std::vector<int> priority;
};

Workload RandomWorkload(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  Workload w;
  const std::vector<int32_t> system = Toks(1, 9);  // Shared by every other prompt.
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p = i % 2 == 0 ? system : std::vector<int32_t>{};
    const int extra = 1 + int(rng() % 20);
    for (int j = 0; j < extra; ++j) p.push_back(int32_t(20 + rng() % 50));
    w.prompts.push_back(p);
    w.max_new.push_back(1 + int64_t(rng() % 15));
    w.priority.push_back(int(rng() % 3));
  }
  return w;
}

// Runs the workload, adding one sequence every other step; returns every finished sequence's
// tokens.
std::map<SeqId, std::vector<int32_t>> RunWorkload(const Workload& w, int32_t blocks, int64_t budget,
                                                  int64_t* preemptions) {
  FakeScheduler h(MakeFakeKv(blocks, /*max_model_len=*/64), Opts(6, budget));
  auto& [kv, clock, sched, loop] = h;
  size_t next = 0;
  for (int step = 0; step < 5000 && (next < w.prompts.size() || !sched.idle()); ++step) {
    if (step % 2 == 0 && next < w.prompts.size()) {
      loop.Add(next + 1, w.prompts[next], w.max_new[next], w.priority[next]);
      ++next;
    }
    clock.Advance(1000);
    const SchedulerOutput out = loop.Step();
    // Every victim came last in service order among what still runs.
    for (SeqId p : out.preempted) {
      for (SeqId r : sched.RunningIds()) {
        EXPECT_TRUE(ServedBefore(*sched.Find(r), *sched.Find(p))) << r << " vs " << p;
      }
    }
  }
  EXPECT_TRUE(sched.idle());
  EXPECT_EQ(UsedBlocks(*kv), 0);
  *preemptions = sched.num_preemptions();
  return loop.outputs();
}

TEST(SchedulerPreemptionTest, RandomWorkloadGivesTheSameTokensInATinyPool) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    const Workload w = RandomWorkload(seed, 30);
    int64_t big_preemptions = 0, small_preemptions = 0;
    const auto big = RunWorkload(w, 512, 64, &big_preemptions);
    const auto small =
        RunWorkload(w, 12, 10, &small_preemptions);  // 48 token slots; prompts <= 29.
    EXPECT_EQ(big_preemptions, 0);
    EXPECT_GT(small_preemptions, 0);
    ASSERT_EQ(big.size(), w.prompts.size());
    EXPECT_EQ(small, big);
  }
}

}  // namespace
}  // namespace kvengine
