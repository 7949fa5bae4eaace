#include "demo/demo_runner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "demo/demo_test_util.h"

namespace kvengine::demo {
namespace {

using testing::SmallOptions;
using testing::Tiny;

RunOptions Options(KvDtype dtype) {
  RunOptions o;
  o.kv_dtype = dtype;
  o.max_model_len = 512;
  o.threads = 1;
  return o;
}

// The whole demo on the tiny model: both runs complete the same work; the prefix cache serves
// the shared system prompt, the document and earlier chat turns; the measured paged peak is
// far below contiguous preallocation; int8 KV holds fewer bytes than f16.
TEST(DemoRunner, EndToEndOnTiny) {
  const Workload w = *BuildWorkload(*Tiny().tokenizer, SmallOptions());
  int64_t progress_calls = 0, last_done = -1;
  RunOptions of16 = Options(KvDtype::kF16);
  of16.on_progress = [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, w.TotalOutputTokens());
    EXPECT_GE(done, last_done);
    last_done = done;
    ++progress_calls;
  };
  Result<RunResult> f16 = RunWorkload(Tiny().model, w, of16);
  ASSERT_TRUE(f16.ok()) << f16.status().ToString();
  Result<RunResult> int8 = RunWorkload(Tiny().model, w, Options(KvDtype::kInt8));
  ASSERT_TRUE(int8.ok()) << int8.status().ToString();
  EXPECT_GT(progress_calls, 0);
  EXPECT_EQ(last_done, w.TotalOutputTokens());

  for (const RunResult* r : {&*f16, &*int8}) {
    EXPECT_EQ(r->generated_tokens, w.TotalOutputTokens());
    EXPECT_EQ(r->prompt_tokens, w.TotalPromptTokens());
    EXPECT_EQ(r->preemptions, 0);
    EXPECT_GT(r->wall_s, 0);
    EXPECT_GT(r->PrefixHitRate(), 0);
    EXPECT_GT(r->peak_kv_bytes, 0u);
    EXPECT_LE(r->peak_kv_bytes, r->pool_bytes);
    EXPECT_LT(r->peak_kv_bytes, r->ContiguousBytes());
    // At least the longest prompt's full blocks were held at once.
    const int64_t longest_blocks = (w.LongestRequest() - w.options.max_tokens) / 16;
    EXPECT_GE(r->peak_tokens_stored, longest_blocks * 16);
    ASSERT_EQ(r->requests.size(), w.requests.size());
    for (size_t i = 0; i < w.requests.size(); ++i) {
      const DemoRequest& d = w.requests[i];
      const RequestResult& rr = r->requests[i];
      EXPECT_EQ(rr.completion_tokens, d.max_tokens) << i;
      EXPECT_EQ(int64_t(rr.output.size()), d.max_tokens) << i;
      EXPECT_EQ(rr.prompt_tokens, d.prompt_tokens) << i;
      EXPECT_GT(rr.ttft_s, 0) << i;
      EXPECT_GE(rr.e2e_s, rr.ttft_s) << i;
      // Requests arriving after their shared prefix is cached hit it: the system prompt's or
      // document's full blocks, or the previous turn's.
      if (d.after >= 0 && w.requests[size_t(d.after)].scenario == d.scenario) {
        const int64_t shared = d.arrival == Arrival::kAfterFinish
                                   ? w.requests[size_t(d.after)].prompt_tokens
                                   : d.prompt_tokens - w.options.question_tokens;
        EXPECT_GE(rr.cached_prompt_tokens, shared / 16 * 16) << i;
      }
      // A chat turn's prompt is the previous turn's prompt + what it generated + a message.
      if (d.history >= 0) {
        const RequestResult& prev = r->requests[size_t(d.history)];
        std::vector<int32_t> expected = prev.prompt;
        expected.insert(expected.end(), prev.output.begin(), prev.output.end());
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), rr.prompt.begin())) << i;
      }
    }
  }
  EXPECT_LT(int8->kv_bytes_per_token, f16->kv_bytes_per_token);
  EXPECT_LT(int8->peak_kv_bytes, f16->peak_kv_bytes);
}

TEST(DemoRunner, RefusesAWorkloadLongerThanTheContext) {
  const Workload w = *BuildWorkload(*Tiny().tokenizer, SmallOptions());
  RunOptions o = Options(KvDtype::kF16);
  o.max_model_len = 128;
  Result<RunResult> r = RunWorkload(Tiny().model, w, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace kvengine::demo
