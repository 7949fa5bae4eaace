// Engine results against the single-sequence reference: concurrent requests of different lengths
// arriving at different times decode exactly what each decodes alone (batch invariance), n > 1
// choices share the prompt's blocks, prefix hits are not recomputed, logprobs and stats.
#include "kvengine/engine.h"

#include <cmath>

#include <gtest/gtest.h>

#include "runtime/engine_test_util.h"

namespace kvengine {
namespace {

using namespace engine_test;  // NOLINT: test helpers.

struct Case {
  RequestParams params;
  RequestId id = 0;
};

std::vector<Case> MixedCases() {
  std::vector<Case> cases;
  const int lengths[] = {5, 70, 17, 33, 1, 48};
  const int64_t max_tokens[] = {20, 12, 30, 8, 25, 16};
  for (int i = 0; i < 6; ++i) {
    Case c;
    c.params.prompt = Prompt(lengths[i], i);
    c.params.max_tokens = max_tokens[i];
    c.params.sampling = Greedy();
    c.params.ignore_eos = i % 2 == 0;
    cases.push_back(c);
  }
  // One sampled request: the same seed gives the same tokens alone and in the batch.
  cases[3].params.sampling = SamplingParams{};
  cases[3].params.sampling.seed = 42;
  return cases;
}

// Submits half the requests, lets them decode a few tokens, then submits the rest.
void RunMixedAndCompare(std::shared_ptr<const Model> model) {
  EventLog log;
  EngineOptions o = BaseOptions(128);
  o.sched.max_num_batched_tokens = 24;  // The 70- and 48-token prompts are chunked.
  o.threads = 2;                  // Kernels split rows across threads: still identical.
  auto engine = MakeEngine(model, o);
  std::vector<Case> cases = MixedCases();
  engine->Start();
  for (size_t i = 0; i < cases.size(); ++i) {
    if (i == 3) {
      ASSERT_TRUE(log.WaitTokens(cases[0].id, 3));
    }
    auto id = engine->Submit(cases[i].params, log.Callback());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    cases[i].id = *id;
  }
  for (const Case& c : cases) {
    ASSERT_TRUE(log.WaitFinals(c.id, 1));
    const std::vector<int32_t> alone = RunAlone(*model, c.params);
    EXPECT_EQ(log.Tokens(c.id), alone) << "prompt of " << c.params.prompt.size();
    const RequestEvent fin = log.Finals(c.id).at(0);
    EXPECT_EQ(fin.completion_tokens, int64_t(alone.size()));
    EXPECT_EQ(fin.prompt_tokens, int64_t(c.params.prompt.size()));
    EXPECT_EQ(fin.finish_reason, !c.params.ignore_eos && alone.back() == kEos
                                     ? FinishReason::kStop
                                     : FinishReason::kLength);
  }
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().requests_running == 0; }));
  const EngineStats s = engine->Stats();
  EXPECT_EQ(UsedBlocks(s), 0);
  EXPECT_EQ(s.requests_finished_total, int64_t(cases.size()));
  EXPECT_EQ(s.ttft.count(), int64_t(cases.size()));
  EXPECT_EQ(s.e2e.count(), int64_t(cases.size()));
  EXPECT_EQ(s.itl.count(), s.generation_tokens_total - int64_t(cases.size()));
  EXPECT_EQ(s.preemptions_total, 0);
}

TEST(EngineTest, ConcurrentRequestsMatchRunningAloneOnTinyModel) {
  RunMixedAndCompare(TinyModel());
}

TEST(EngineTest, ConcurrentRequestsMatchRunningAloneOnStories260K) {
  KV_REQUIRE_MODEL(StoriesPath());
  RunMixedAndCompare(StoriesModel());
}

// Four greedy requests of prompt0 + 30 i prompt tokens and max_tokens0 + 10 i new tokens in a pool
// of `blocks` blocks small enough to preempt: each decodes what it decodes alone. `s`: the stats
// once all have ended.
void RunFourUnderPreemption(std::shared_ptr<const Model> model, int32_t blocks, int prompt0,
                            int64_t max_tokens0, double timeout_s, EngineStats* s) {
  EventLog log;
  EngineOptions o = BaseOptions(blocks);
  o.sched.max_num_batched_tokens = 32;
  auto engine = MakeEngine(model, o);
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 4; ++i)
    reqs.push_back(GreedyRequest(prompt0 + 30 * i, max_tokens0 + 10 * i, i));
  ASSERT_NO_FATAL_FAILURE(ExpectSameTokensAsAlone(*engine, log, *model, reqs, timeout_s));
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().requests_running == 0; }));
  *s = engine->Stats();
  EXPECT_GT(s->preemptions_total, 0);
  EXPECT_EQ(UsedBlocks(*s), 0);
}

TEST(EngineTest, SlidingWindowModelMatchesRunningAloneUnderPreemption) {
  // mistral-tiny: every layer sees the last 64 tokens, so a sequence holds at most ~6 blocks
  // however long it grows; 14 blocks for four requests of 150-250 tokens force preemptions.
  EngineStats s;
  RunFourUnderPreemption(SyntheticModel("mistral-tiny"), 14, 100, 50, 30, &s);
}

TEST(EngineTest, HybridWindowModelsMatchRunningAloneUnderPreemption) {
  // gemma2-tiny and gemma3-tiny: windowed (32 tokens) and global layers in one model, two KV
  // groups in one pool. The global group grows with each sequence; 40 blocks for four requests
  // of 130-220 tokens force preemptions, and every request must still decode what it decodes
  // alone.
  for (const char* preset : {"gemma2-tiny", "gemma3-tiny"}) {
    SCOPED_TRACE(preset);
    EngineStats s;
    ASSERT_NO_FATAL_FAILURE(RunFourUnderPreemption(SyntheticModel(preset), 40, 90, 40, 120, &s));
    EXPECT_EQ(s.kv.groups.size(), 2u);
  }
}

TEST(EngineTest, ChoicesShareThePromptAndMatchSeededSingleRuns) {
  auto model = TinyModel();
  EventLog log;
  auto engine = MakeEngine(model, BaseOptions(128));
  engine->Start();
  RequestParams p;
  p.prompt = Prompt(40);  // Two full blocks and a partial one.
  p.max_tokens = 10;
  p.n = 3;
  p.ignore_eos = true;
  p.sampling.seed = 7;
  p.sampling.temperature = 1.0f;
  auto id = engine->Submit(p, log.Callback());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(log.WaitFinals(*id, 3));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(log.Tokens(*id, i), RunAlone(*model, p, i)) << i;
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().requests_running == 0; }));
  const EngineStats s = engine->Stats();
  // One prefill for all three choices; two of them copied the shared partial block on their
  // first write (the third wrote it in place once it held it alone).
  EXPECT_EQ(s.prompt_tokens_total, 40);
  EXPECT_EQ(s.prompt_tokens_computed_total, 40);
  EXPECT_EQ(s.kv.cow_copies, 2);
  EXPECT_EQ(s.generation_tokens_total, 30);
  EXPECT_EQ(UsedBlocks(s), 0);
  for (const RequestEvent& f : log.Finals(*id)) EXPECT_EQ(f.finish_reason, FinishReason::kLength);
}

TEST(EngineTest, ChoicesShareBlocksWhileRunning) {
  auto model = TinyModel();
  EventLog log;
  auto engine = MakeEngine(model, BaseOptions(128));
  RequestParams p;
  p.prompt = Prompt(40);
  p.max_tokens = 400;
  p.n = 3;
  p.ignore_eos = true;
  RequestId id = 0;
  int tokens = 0;
  EngineStats mid;
  auto cb = log.Callback();
  // Stats are published before a step's events: at the 12th token they show that step.
  auto r = engine->Submit(p, [&](const RequestEvent& e) {
    cb(e);
    if (e.has_token && ++tokens == 12) {
      mid = engine->Stats();
      engine->Cancel(id);
    }
  });
  ASSERT_TRUE(r.ok());
  id = *r;
  engine->Start();
  ASSERT_TRUE(log.WaitFinals(id, 3));
  // The prompt's two full blocks are held by all three choices; each has its own third block.
  EXPECT_EQ(mid.kv.groups[0].shared_blocks, 2);
  EXPECT_EQ(mid.kv.groups[0].used_blocks, 2 + 3);
  EXPECT_EQ(mid.requests_running, 1);
}

TEST(EngineTest, SharedPrefixIsNotRecomputed) {
  auto model = TinyModel();
  EventLog log;
  auto engine = MakeEngine(model, BaseOptions(128));
  engine->Start();
  RequestParams a;
  a.prompt = Prompt(50);
  a.max_tokens = 5;
  a.sampling = Greedy();
  RequestParams b = a;
  b.prompt.resize(48);
  b.prompt.push_back(400);  // Same first 3 blocks, different tail.
  auto ida = engine->Submit(a, log.Callback());
  ASSERT_TRUE(ida.ok());
  ASSERT_TRUE(log.WaitFinals(*ida, 1));
  auto idb = engine->Submit(b, log.Callback());
  ASSERT_TRUE(idb.ok());
  ASSERT_TRUE(log.WaitFinals(*idb, 1));
  EXPECT_EQ(log.Finals(*ida)[0].cached_prompt_tokens, 0);
  EXPECT_EQ(log.Finals(*idb)[0].cached_prompt_tokens, 48);
  EXPECT_EQ(log.Tokens(*idb), RunAlone(*model, b));
  ASSERT_TRUE(WaitUntil([&] { return engine->Stats().requests_running == 0; }));
  const EngineStats s = engine->Stats();
  EXPECT_EQ(s.prompt_tokens_total, 50 + 49);
  EXPECT_EQ(s.prompt_tokens_computed_total, 50 + 1);
  EXPECT_LT(s.prompt_tokens_computed_total, s.prompt_tokens_total);
  EXPECT_EQ(s.prefix_cache_hits_tokens, 48);
  EXPECT_GT(s.kv.groups[0].cached_blocks, 0);
  EXPECT_EQ(UsedBlocks(s), 0);
}

TEST(EngineTest, LogprobsAreTheLogSoftmaxOfTheLogits) {
  auto model = TinyModel();
  EventLog log;
  auto engine = MakeEngine(model, BaseOptions(64));
  engine->Start();
  RequestParams p = GreedyRequest(9, 6);
  p.logprobs = 5;
  auto id = engine->Submit(p, log.Callback());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(log.WaitFinals(*id, 1));
  std::vector<RequestEvent> tokens;
  for (const RequestEvent& e : log.Events(*id)) {
    if (e.has_token) tokens.push_back(e);
  }
  ASSERT_EQ(tokens.size(), 6u);
  for (const RequestEvent& e : tokens) {
    ASSERT_EQ(e.top_logprobs.size(), 5u);
    EXPECT_EQ(e.top_logprobs[0].token, e.token);  // Greedy picks the most likely.
    EXPECT_EQ(e.top_logprobs[0].logprob, e.logprob);
    double mass = 0;
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_LE(e.top_logprobs[k].logprob, 0.0f);
      if (k > 0) {
        EXPECT_LE(e.top_logprobs[k].logprob, e.top_logprobs[k - 1].logprob);
      }
      mass += std::exp(double(e.top_logprobs[k].logprob));
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
  // The last token's logprob from the reference run's logits.
  auto kv = testing::MakeKv(*model, KvDtype::kF16, 512, 16, false, 64);
  ThreadPool pool(1);
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.sampling = Greedy();
  o.stop_at_eos = false;
  auto r = Generate(*model, *kv, pool, 1, p.prompt, o);
  ASSERT_TRUE(r.ok());
  double mx = -INFINITY, sum = 0;
  for (float l : r->last_logits) mx = std::max(mx, double(l));
  for (float l : r->last_logits) sum += std::exp(double(l) - mx);
  const double want = r->last_logits[size_t(r->output_ids.back())] - (mx + std::log(sum));
  EXPECT_NEAR(tokens.back().logprob, want, 1e-5);
}

}  // namespace
}  // namespace kvengine
