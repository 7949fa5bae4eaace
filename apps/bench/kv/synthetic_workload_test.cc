#include "bench/kv/synthetic_workload.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kvengine {
namespace {

struct Means {
  double prompt = 0;
  double output = 0;
  int64_t max_prompt = 0;
};

Means MeansOf(const Workload& w) {
  Means m;
  for (const SimRequest& r : w.requests) {
    m.prompt += static_cast<double>(r.prompt.size());
    m.output += static_cast<double>(r.output.size());
    m.max_prompt = std::max<int64_t>(m.max_prompt, static_cast<int64_t>(r.prompt.size()));
  }
  m.prompt /= static_cast<double>(w.requests.size());
  m.output /= static_cast<double>(w.requests.size());
  return m;
}

TEST(SyntheticWorkloadTest, ShareGptMeansNearTargetsAndLongTailed) {
  for (uint64_t seed : {1, 2, 3}) {
    WorkloadSpec spec;
    spec.num_requests = 4000;
    spec.seed = seed;
    Result<Workload> w = GenerateWorkload(spec);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_EQ(w->requests.size(), 4000u);
    const Means m = MeansOf(*w);
    // Standard error of either mean is ~2% at n = 4000 (lognormal, sigma <= 1).
    EXPECT_NEAR(m.prompt, kShareGptPromptMean, 0.08 * kShareGptPromptMean) << "seed " << seed;
    EXPECT_NEAR(m.output, kShareGptOutputMean, 0.08 * kShareGptOutputMean) << "seed " << seed;
    EXPECT_GT(m.max_prompt, 5 * kShareGptPromptMean) << "long tail";
    for (const SimRequest& r : w->requests) {
      EXPECT_GE(r.prompt.size(), 1u);
      EXPECT_GE(r.output.size(), 1u);
      EXPECT_LE(r.prompt.size() + r.output.size(), 4096u);
      EXPECT_EQ(r.turn, 0);
      EXPECT_EQ(r.next, -1);
      for (int32_t t : r.prompt) ASSERT_TRUE(t >= 0 && t < 32000);
    }
  }
}

TEST(SyntheticWorkloadTest, MaxModelLenIsRespected) {
  for (KvWorkload kind : kAllKvWorkloads) {
    WorkloadSpec spec;
    spec.kind = kind;
    spec.max_model_len = 300;
    spec.system_prompt_tokens = 200;
    spec.num_requests = 500;
    Result<Workload> w = GenerateWorkload(spec);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (const SimRequest& r : w->requests) {
      EXPECT_LE(r.prompt.size() + r.output.size(), 300u) << KvWorkloadName(kind);
      EXPECT_GE(r.output.size(), 1u);
    }
  }
}

TEST(SyntheticWorkloadTest, DeterministicBySeed) {
  for (KvWorkload kind : kAllKvWorkloads) {
    WorkloadSpec spec;
    spec.kind = kind;
    spec.num_requests = 50;
    const Workload a = GenerateWorkload(spec).value();
    const Workload b = GenerateWorkload(spec).value();
    spec.seed = 2;
    const Workload c = GenerateWorkload(spec).value();
    ASSERT_EQ(a.requests.size(), b.requests.size());
    bool differs = a.requests.size() != c.requests.size();
    for (size_t i = 0; i < a.requests.size(); ++i) {
      EXPECT_EQ(a.requests[i].prompt, b.requests[i].prompt);
      EXPECT_EQ(a.requests[i].output, b.requests[i].output);
      if (i < c.requests.size()) differs = differs || a.requests[i].output != c.requests[i].output;
    }
    EXPECT_TRUE(differs) << KvWorkloadName(kind);
  }
}

TEST(SyntheticWorkloadTest, WorkloadsDrawIndependentStreams) {
  WorkloadSpec spec;
  spec.num_requests = 10;
  const Workload a = GenerateWorkload(spec).value();
  spec.kind = KvWorkload::kMultiTurn;
  spec.turns = 1;
  const Workload b = GenerateWorkload(spec).value();
  EXPECT_NE(a.requests[0].output, b.requests[0].output);
}

TEST(SyntheticWorkloadTest, SharedPrefixStartsWithOneSystemPrompt) {
  WorkloadSpec spec;
  spec.kind = KvWorkload::kSharedPrefix;
  spec.num_requests = 2000;
  const Workload w = GenerateWorkload(spec).value();
  const std::vector<int32_t> system(w.requests[0].prompt.begin(),
                                    w.requests[0].prompt.begin() + 1024);
  double user = 0;
  for (const SimRequest& r : w.requests) {
    ASSERT_GT(r.prompt.size(), 1024u);
    EXPECT_TRUE(std::equal(system.begin(), system.end(), r.prompt.begin()));
    user += static_cast<double>(r.prompt.size() - 1024);
  }
  EXPECT_NEAR(user / 2000, kUserMessageMean, 0.08 * kUserMessageMean);
  EXPECT_NEAR(MeansOf(w).output, kShareGptOutputMean, 0.08 * kShareGptOutputMean);
}

TEST(SyntheticWorkloadTest, MultiTurnPromptsExtendTheConversation) {
  WorkloadSpec spec;
  spec.kind = KvWorkload::kMultiTurn;
  spec.num_requests = 1000;
  spec.turns = 5;
  const Workload w = GenerateWorkload(spec).value();
  ASSERT_EQ(w.requests.size(), 1000u);
  for (size_t i = 0; i < w.requests.size(); ++i) {
    const SimRequest& r = w.requests[i];
    EXPECT_EQ(r.session, static_cast<int32_t>(i / 5));
    EXPECT_EQ(r.turn, static_cast<int32_t>(i % 5));
    EXPECT_EQ(r.next, r.turn == 4 ? -1 : static_cast<int32_t>(i + 1));
    EXPECT_LE(r.prompt.size() + r.output.size(), 4096u);
    if (r.turn == 0) continue;
    // Previous prompt + previous output + at least one new token.
    const SimRequest& prev = w.requests[i - 1];
    std::vector<int32_t> history = prev.prompt;
    history.insert(history.end(), prev.output.begin(), prev.output.end());
    ASSERT_GT(r.prompt.size(), history.size());
    EXPECT_TRUE(std::equal(history.begin(), history.end(), r.prompt.begin()));
  }
}

TEST(SyntheticWorkloadTest, RejectsImpossibleSpecs) {
  WorkloadSpec spec;
  spec.num_requests = 0;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
  spec = {};
  spec.kind = KvWorkload::kSharedPrefix;
  spec.system_prompt_tokens = 4095;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
  spec = {};
  spec.kind = KvWorkload::kMultiTurn;
  spec.turns = 3000;
  spec.num_requests = 3000;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
  spec.turns = 0;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
  spec = {};
  spec.vocab_size = 1;
  EXPECT_FALSE(GenerateWorkload(spec).ok());
}

TEST(SyntheticWorkloadTest, ParsesNames) {
  for (KvWorkload w : kAllKvWorkloads) EXPECT_EQ(ParseKvWorkload(KvWorkloadName(w)).value(), w);
  EXPECT_EQ(ParseKvWorkload("multi-turn").value(), KvWorkload::kMultiTurn);
  EXPECT_FALSE(ParseKvWorkload("chat").ok());
}

}  // namespace
}  // namespace kvengine
