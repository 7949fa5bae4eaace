#include "demo/demo_workload.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "demo/demo_test_util.h"
#include "demo/demo_text.h"

namespace kvengine::demo {
namespace {

using testing::SmallOptions;
using testing::Tiny;

std::vector<const DemoRequest*> Of(const Workload& w, Scenario s) {
  std::vector<const DemoRequest*> out;
  for (const DemoRequest& r : w.requests) {
    if (r.scenario == s) out.push_back(&r);
  }
  return out;
}

bool StartsWith(const std::vector<int32_t>& v, const std::vector<int32_t>& prefix) {
  return v.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), v.begin());
}

TEST(TokensOfLength, ExactLengthWithBosFirst) {
  const Tokenizer& tok = *Tiny().tokenizer;
  for (int n : {1, 5, 64, 700}) {
    const std::vector<int32_t> ids = TokensOfLength(tok, "System:", SystemPromptParagraphs(), 0, n,
                                                    /*bos=*/true);
    ASSERT_EQ(ids.size(), size_t(n));
    EXPECT_EQ(ids[0], tok.bos());
  }
  const std::vector<int32_t> no_bos =
      TokensOfLength(tok, "", UserQuestions(), 3, 10, /*bos=*/false);
  EXPECT_EQ(no_bos.size(), 10u);
  EXPECT_NE(no_bos[0], tok.bos());
  // Different starting texts give different tokens.
  EXPECT_NE(no_bos, TokensOfLength(tok, "", UserQuestions(), 4, 10, /*bos=*/false));
}

TEST(DemoWorkload, ShapesAndArrivals) {
  const WorkloadOptions o = SmallOptions();
  Result<Workload> w = BuildWorkload(*Tiny().tokenizer, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->CountOf(Scenario::kSharedSystemPrompt), o.users);
  EXPECT_EQ(w->CountOf(Scenario::kMultiTurnChat), o.chat_turns);
  EXPECT_EQ(w->CountOf(Scenario::kLongDocument), o.document_questions);
  for (size_t i = 0; i < w->requests.size(); ++i) {
    const DemoRequest& r = w->requests[i];
    EXPECT_EQ(r.max_tokens, o.max_tokens);
    EXPECT_LT(r.history, int(i));
    EXPECT_LT(r.after, int(i));
    EXPECT_EQ(r.after < 0, r.arrival == Arrival::kAtStart) << i;
    if (r.history < 0) {
      EXPECT_EQ(r.prompt_tokens, int64_t(r.tokens.size())) << i;
    }
  }
  EXPECT_EQ(w->LongestRequest(), o.LongestRequest());
}

TEST(DemoWorkload, SystemPromptAndDocumentAreReallyShared) {
  const WorkloadOptions o = SmallOptions();
  Workload w = *BuildWorkload(*Tiny().tokenizer, o);
  for (auto [scenario, shared_len, q_len] :
       {std::tuple{Scenario::kSharedSystemPrompt, o.system_prompt_tokens, o.question_tokens},
        std::tuple{Scenario::kLongDocument, o.document_tokens, o.question_tokens}}) {
    const std::vector<const DemoRequest*> rs = Of(w, scenario);
    ASSERT_GE(rs.size(), 2u);
    const std::vector<int32_t> prefix(rs[0]->tokens.begin(), rs[0]->tokens.begin() + shared_len);
    EXPECT_EQ(prefix[0], Tiny().tokenizer->bos());
    for (size_t k = 0; k < rs.size(); ++k) {
      EXPECT_EQ(rs[k]->prompt_tokens, shared_len + q_len);
      EXPECT_TRUE(StartsWith(rs[k]->tokens, prefix)) << ScenarioName(scenario) << " " << k;
      // The first user arrives at start, the first question with the other users; the rest
      // once the first one's prompt is cached.
      if (k == 0 && scenario == Scenario::kSharedSystemPrompt) {
        EXPECT_EQ(rs[k]->arrival, Arrival::kAtStart);
      } else {
        EXPECT_EQ(rs[k]->arrival, Arrival::kAfterFirstToken);
        EXPECT_EQ(w.requests[size_t(rs[k]->after)].index, 0);
      }
      if (k > 0) {
        EXPECT_EQ(&w.requests[size_t(rs[k]->after)], rs[0]);
        EXPECT_NE(rs[k]->tokens, rs[0]->tokens) << "every question differs";
      }
    }
  }
}

TEST(DemoWorkload, EachTurnExtendsThePreviousPromptAndOutput) {
  const WorkloadOptions o = SmallOptions();
  Workload w = *BuildWorkload(*Tiny().tokenizer, o);
  const size_t n = w.requests.size();
  std::vector<std::vector<int32_t>> prompts(n), outputs(n);
  std::vector<size_t> turns;
  for (size_t i = 0; i < n; ++i) {
    prompts[i] = w.Prompt(i, prompts, outputs);
    EXPECT_EQ(int64_t(prompts[i].size()), w.requests[i].prompt_tokens) << i;
    // Stand-in outputs of exactly max_tokens tokens, different per request.
    for (int t = 0; t < w.requests[i].max_tokens; ++t) outputs[i].push_back(300 + int32_t(i) + t);
    if (w.requests[i].scenario == Scenario::kMultiTurnChat) turns.push_back(i);
  }
  ASSERT_EQ(turns.size(), size_t(o.chat_turns));
  EXPECT_EQ(w.requests[turns[0]].arrival, Arrival::kAtStart);
  for (size_t k = 1; k < turns.size(); ++k) {
    const DemoRequest& r = w.requests[turns[k]];
    EXPECT_EQ(r.history, int(turns[k - 1]));
    EXPECT_EQ(r.arrival, Arrival::kAfterFinish);
    EXPECT_EQ(r.after, int(turns[k - 1]));
    std::vector<int32_t> expected = prompts[turns[k - 1]];
    expected.insert(expected.end(), outputs[turns[k - 1]].begin(), outputs[turns[k - 1]].end());
    EXPECT_TRUE(StartsWith(prompts[turns[k]], expected)) << "turn " << k;
    EXPECT_EQ(prompts[turns[k]].size(), expected.size() + size_t(o.chat_message_tokens));
  }
}

TEST(DemoWorkload, FitToContext) {
  const WorkloadOptions o;  // The defaults: a document of 1536 tokens.
  EXPECT_GT(o.LongestRequest(), 512);
  Result<WorkloadOptions> fit = FitToContext(o, 512);
  ASSERT_TRUE(fit.ok());
  EXPECT_LE(fit->LongestRequest(), 512);
  EXPECT_GT(fit->LongestRequest(), 400) << "shrinks no more than needed";
  EXPECT_EQ(fit->users, o.users) << "counts stay";
  EXPECT_EQ(FitToContext(o, 1 << 20)->LongestRequest(), o.LongestRequest());
  Result<WorkloadOptions> none = FitToContext(o, 4);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("-c"), std::string::npos);
}

TEST(DemoWorkload, ScaledAndValidate) {
  const WorkloadOptions o;
  const WorkloadOptions half = o.Scaled(0.5);
  EXPECT_EQ(half.users, o.users / 2);
  EXPECT_EQ(half.document_tokens, o.document_tokens / 2);
  EXPECT_EQ(o.Scaled(0.001).users, 1);
  EXPECT_TRUE(o.Validate().ok());
  WorkloadOptions bad = o;
  bad.users = 0;
  EXPECT_FALSE(bad.Validate().ok());
  EXPECT_FALSE(BuildWorkload(*Tiny().tokenizer, bad).ok());
}

}  // namespace
}  // namespace kvengine::demo
