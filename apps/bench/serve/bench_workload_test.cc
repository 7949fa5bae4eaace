#include "bench/serve/bench_workload.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvengine::loadgen {
namespace {

Workload Make(KvWorkload kind, int64_t n, int turns = 3) {
  WorkloadSpec spec;
  spec.kind = kind;
  spec.num_requests = n;
  spec.turns = turns;
  spec.max_model_len = 512;
  spec.system_prompt_tokens = 100;
  spec.vocab_size = 512;
  Result<Workload> w = GenerateWorkload(spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return *w;
}

TEST(BenchWorkloadTest, SingleTurnWorkloadsAreOneTurnConversations) {
  const Workload w = Make(KvWorkload::kSharedPrefix, 20);
  const std::vector<Conversation> c = ToConversations(w, LengthCaps{});
  ASSERT_EQ(c.size(), 20u);
  EXPECT_EQ(CountTurns(c), 20);
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_EQ(c[i].turns.size(), 1u);
    EXPECT_EQ(c[i].turns[0].message, w.requests[i].prompt);
    EXPECT_EQ(c[i].turns[0].max_tokens, int64_t(w.requests[i].output.size()));
    EXPECT_EQ(c[i].turns[0].planned_output, w.requests[i].output);
  }
}

TEST(BenchWorkloadTest, MultiTurnKeepsOnlyTheNewUserMessage) {
  const Workload w = Make(KvWorkload::kMultiTurn, 12, 3);
  const std::vector<Conversation> c = ToConversations(w, LengthCaps{});
  ASSERT_EQ(c.size(), 4u);
  for (size_t k = 0; k < c.size(); ++k) {
    ASSERT_EQ(c[k].turns.size(), 3u);
    // Rebuilding each prompt from history + message gives the workload's prompt back.
    std::vector<int32_t> history;
    for (size_t t = 0; t < 3; ++t) {
      const SimRequest& r = w.requests[k * 3 + t];
      std::vector<int32_t> prompt = history;
      prompt.insert(prompt.end(), c[k].turns[t].message.begin(), c[k].turns[t].message.end());
      EXPECT_EQ(prompt, r.prompt) << "conversation " << k << " turn " << t;
      history = prompt;
      history.insert(history.end(), r.output.begin(), r.output.end());
    }
  }
}

TEST(BenchWorkloadTest, CapsShortenPromptsMessagesAndOutputs) {
  const LengthCaps caps{.max_prompt_tokens = 120, .max_output_tokens = 8};
  const Workload shared = Make(KvWorkload::kSharedPrefix, 10);
  for (const Conversation& c : ToConversations(shared, caps)) {
    EXPECT_LE(c.turns[0].message.size(), 120u);
    EXPECT_GE(c.turns[0].message.size(), 101u);  // The 100-token system prompt + >= 1 more.
    EXPECT_LE(c.turns[0].max_tokens, 8);
    EXPECT_EQ(int64_t(c.turns[0].planned_output.size()), c.turns[0].max_tokens);
  }
  const std::vector<Conversation> multi =
      ToConversations(Make(KvWorkload::kMultiTurn, 9, 3),
                      LengthCaps{.max_prompt_tokens = 5, .max_output_tokens = 0});
  for (const Conversation& c : multi) {
    for (const Turn& t : c.turns) EXPECT_LE(t.message.size(), 5u);
  }
}

TEST(BenchWorkloadTest, PoissonArrivals) {
  const std::vector<double> a = PoissonArrivals(20000, 4.0, 3);
  EXPECT_EQ(a, PoissonArrivals(20000, 4.0, 3));  // Seeded: the same everywhere.
  EXPECT_NE(a, PoissonArrivals(20000, 4.0, 4));
  EXPECT_EQ(a[0], 0);
  for (size_t i = 1; i < a.size(); ++i) ASSERT_GE(a[i], a[i - 1]);
  const double mean_gap = a.back() / double(a.size() - 1);
  EXPECT_NEAR(mean_gap, 0.25, 0.01);  // 1 / rate, within ~3 standard errors.
  for (double t : PoissonArrivals(5, INFINITY, 1)) EXPECT_EQ(t, 0);
}

}  // namespace
}  // namespace kvengine::loadgen
