#include "bench/kv/kv_simulator.h"

#include <gtest/gtest.h>

#include <numeric>

#include "kv/block_layout.h"
#include "bench/kv/workload_test_util.h"

namespace kvengine {
namespace {

using workload_testing::FullGroup;

// A small model: one group of 2 layers x 2 heads x 8 dims (f16), and a budget of `blocks`
// 16-token blocks (so the paged pool has exactly that many).
KvBackendConfig SmallConfig(int blocks, int64_t max_model_len) {
  KvBackendConfig c;
  c.groups = {FullGroup(2, 2, 8, KvDtype::kF16)};
  c.block_size = 16;
  c.memory_bytes = uint64_t(blocks) * BlockLayout(c.groups[0], 16).bytes_per_block();
  c.max_model_len = max_model_len;
  c.model_fingerprint = "small";
  return c;
}

std::unique_ptr<KvBackend> Backend(KvPolicy p, const KvBackendConfig& c) {
  Result<std::unique_ptr<KvBackend>> b = MakeKvBackend(p, c);
  KV_CHECK(b.ok()) << b.status().ToString();
  return std::move(b).value();
}

SimRequest Req(int32_t session, std::vector<int32_t> prompt, int32_t output_len) {
  SimRequest r;
  r.session = session;
  r.prompt = std::move(prompt);
  r.output.resize(size_t(output_len));
  std::iota(r.output.begin(), r.output.end(), 20000 + 100 * session);
  return r;
}

TEST(KvSimulatorTest, EveryRequestCompletesAndNothingLeaks) {
  WorkloadSpec spec;
  spec.num_requests = 60;
  spec.max_model_len = 512;
  spec.system_prompt_tokens = 128;
  for (KvWorkload kind : kAllKvWorkloads) {
    spec.kind = kind;
    const Workload w = GenerateWorkload(spec).value();
    for (KvPolicy policy : kAllKvPolicies) {
      // 128 blocks = 2048 slots: 4 contiguous sequences of 512.
      std::unique_ptr<KvBackend> b = Backend(policy, SmallConfig(128, 512));
      int64_t last_done = 0;
      Result<SimResult> r = SimulateKv(w, b.get(), {}, [&](int64_t done, int64_t total) {
        EXPECT_GT(done, last_done);
        EXPECT_EQ(total, 60);
        last_done = done;
      });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string what =
          std::string(KvWorkloadName(kind)) + "/" + std::string(KvPolicyName(policy));
      EXPECT_EQ(r->requests_completed, 60) << what;
      EXPECT_EQ(last_done, 60) << what;
      EXPECT_EQ(r->decoded_tokens, w.TotalOutputTokens()) << what;
      EXPECT_TRUE(r->idle_at_end) << what;
      EXPECT_TRUE(b->Idle()) << what;
      EXPECT_GE(r->peak_running, 1) << what;
      EXPECT_LE(r->mean_running, static_cast<double>(r->peak_running)) << what;
      EXPECT_GT(r->utilization, 0) << what;
      EXPECT_LE(r->utilization, 1) << what;
      if (policy == KvPolicy::kContiguous) {
        EXPECT_LE(r->peak_running, 4) << what;
      }
      if (policy != KvPolicy::kPagedPrefix) {
        EXPECT_EQ(r->cached_prompt_tokens + r->cached_recompute_tokens, 0) << what;
      }
    }
  }
}

TEST(KvSimulatorTest, TinyBudgetPreemptsAndStillCompletes) {
  // 20 blocks = 320 slots for sequences of up to 256 tokens: growing decodes must preempt.
  WorkloadSpec spec;
  spec.num_requests = 40;
  spec.max_model_len = 256;
  const Workload w = GenerateWorkload(spec).value();
  for (KvPolicy policy : {KvPolicy::kPagedPrefix, KvPolicy::kPagedNoPrefix}) {
    std::unique_ptr<KvBackend> b = Backend(policy, SmallConfig(20, 256));
    Result<SimResult> r = SimulateKv(w, b.get());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT(r->preemptions, 0) << KvPolicyName(policy);
    EXPECT_EQ(r->requests_completed, 40);
    EXPECT_EQ(r->decoded_tokens, w.TotalOutputTokens());
    EXPECT_EQ(r->prompt_tokens, w.TotalPromptTokens());
    EXPECT_GT(r->recompute_tokens, 0) << "preempted sequences are recomputed";
    EXPECT_TRUE(r->idle_at_end);
  }
}

TEST(KvSimulatorTest, ContiguousRunsOneSequenceAtATime) {
  // One region: requests run back to back, one step per output token.
  Workload w;
  w.requests.push_back(Req(0, {1, 2, 3}, 3));
  w.requests.push_back(Req(1, {4, 5}, 2));
  KvBackendConfig c = SmallConfig(4, 64);  // 64 slots = 1 region of 64.
  std::unique_ptr<KvBackend> b = Backend(KvPolicy::kContiguous, c);
  EXPECT_EQ(b->capacity_tokens(), 64);
  const SimResult r = SimulateKv(w, b.get()).value();
  EXPECT_EQ(r.steps, 5);
  EXPECT_EQ(r.peak_running, 1);
  EXPECT_DOUBLE_EQ(r.mean_running, 1.0);
  // Held tokens after each step's decode: 4, 5, 6 (region of 64), then 3, 4.
  EXPECT_NEAR(r.utilization, (4 + 5 + 6 + 3 + 4) / 64.0 / 5, 1e-12);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.recompute_tokens, 0);
}

TEST(KvSimulatorTest, PrefixCacheServesASharedPrompt) {
  std::vector<int32_t> prompt(40);
  std::iota(prompt.begin(), prompt.end(), 7);
  Workload w;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p = prompt;
    p.push_back(1000 + i);
    w.requests.push_back(Req(i, p, 4));
  }
  for (KvPolicy policy : {KvPolicy::kPagedPrefix, KvPolicy::kPagedNoPrefix}) {
    std::unique_ptr<KvBackend> b = Backend(policy, SmallConfig(64, 256));
    const SimResult r = SimulateKv(w, b.get()).value();
    EXPECT_EQ(r.prompt_tokens, 3 * 41);
    // The first request computes everything; the next two find 2 full blocks (32 tokens).
    EXPECT_EQ(r.cached_prompt_tokens, policy == KvPolicy::kPagedPrefix ? 2 * 32 : 0);
    EXPECT_EQ(r.peak_running, 3);
    EXPECT_EQ(r.steps, 4);
  }
}

// The multi-turn workload of 40 requests: 10 conversations of 4 turns within 1024 tokens.
Workload TenConversationsOfFourTurns() {
  WorkloadSpec spec;
  spec.kind = KvWorkload::kMultiTurn;
  spec.num_requests = 40;
  spec.turns = 4;
  spec.max_model_len = 1024;
  return GenerateWorkload(spec).value();
}

TEST(KvSimulatorTest, NextTurnHitsThePreviousTurnsBlocks) {
  const Workload w = TenConversationsOfFourTurns();
  std::unique_ptr<KvBackend> b = Backend(KvPolicy::kPagedPrefix, SmallConfig(256, 1024));
  const SimResult r = SimulateKv(w, b.get()).value();
  EXPECT_EQ(r.requests_completed, 40);
  EXPECT_GT(static_cast<double>(r.cached_prompt_tokens) / r.prompt_tokens, 0.5);
}

TEST(KvSimulatorTest, ArrivalOrderQueuesFollowUpsBehindEveryone) {
  const Workload w = TenConversationsOfFourTurns();
  SimOptions arrival;
  arrival.session_fcfs = false;
  std::unique_ptr<KvBackend> a = Backend(KvPolicy::kPagedPrefix, SmallConfig(256, 1024));
  std::unique_ptr<KvBackend> s = Backend(KvPolicy::kPagedPrefix, SmallConfig(256, 1024));
  const SimResult by_arrival = SimulateKv(w, a.get(), arrival).value();
  const SimResult by_session = SimulateKv(w, s.get()).value();
  EXPECT_EQ(by_arrival.requests_completed, 40);
  EXPECT_TRUE(by_arrival.idle_at_end);
  // Follow-ups wait behind every other conversation: their blocks are evicted meanwhile.
  EXPECT_LT(by_arrival.cached_prompt_tokens, by_session.cached_prompt_tokens);
}

TEST(KvSimulatorTest, RequestLongerThanThePoolIsAnError) {
  Workload w;
  w.requests.push_back(Req(0, std::vector<int32_t>(100, 1), 1));
  std::unique_ptr<KvBackend> b = Backend(KvPolicy::kPagedNoPrefix, SmallConfig(4, 64));
  Result<SimResult> r = SimulateKv(w, b.get());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
}

TEST(KvSimulatorTest, BackendNeedsRoomForOneFullSequence) {
  for (KvPolicy policy : kAllKvPolicies) {
    EXPECT_FALSE(MakeKvBackend(policy, SmallConfig(3, 64)).ok()) << KvPolicyName(policy);
    EXPECT_TRUE(MakeKvBackend(policy, SmallConfig(4, 64)).ok()) << KvPolicyName(policy);
  }
}

TEST(KvSimulatorTest, ParsesPolicyNames) {
  for (KvPolicy p : kAllKvPolicies) EXPECT_EQ(ParseKvPolicy(KvPolicyName(p)).value(), p);
  EXPECT_EQ(ParseKvPolicy("paged-no-prefix").value(), KvPolicy::kPagedNoPrefix);
  EXPECT_FALSE(ParseKvPolicy("paged").ok());
}

}  // namespace
}  // namespace kvengine
