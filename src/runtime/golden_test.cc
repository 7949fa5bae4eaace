// Golden test against llama.cpp on the real stories260K model: greedy ids for two prompts must
// match exactly with f32 and f16 KV, the teacher-forced top-5 logits within 2e-2, and with int8
// KV the first 16 ids (a sanity floor; accuracy is measured by perplexity elsewhere).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"

namespace kvengine {
namespace {

using testing::ModelsDir;
using testing::StoriesPath;

constexpr float kGoldenLogitTolerance = 2e-2f;

nlohmann::json Golden() {
  std::ifstream in(ModelsDir() / "stories260K.golden.json");
  return nlohmann::json::parse(in);
}

void CheckGreedy(KvDtype dtype, size_t ids_to_match) {
  KV_REQUIRE_MODEL(StoriesPath());
  auto m = testing::LoadForTest(StoriesPath());
  ThreadPool pool(2);
  const nlohmann::json golden = Golden();  // Named: a temporary would die before the loop body.
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c["prompt"].get<std::string>() + " " + std::string(KvDtypeName(dtype)));
    const auto prompt = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto expected = c["output_token_ids"].get<std::vector<int32_t>>();
    auto kv = testing::MakeKv(*m.model, dtype, 512);
    const GenerateOptions o = testing::GreedyOptions(int64_t(expected.size()));
    auto r = Generate(*m.model, *kv, pool, 1, prompt, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->output_ids.size(), expected.size());
    for (size_t i = 0; i < ids_to_match; ++i) {
      ASSERT_EQ(r->output_ids[i], expected[i]) << "token " << i;
    }
  }
}

TEST(GoldenTest, GreedyIdsF32Kv) { CheckGreedy(KvDtype::kF32, 64); }
TEST(GoldenTest, GreedyIdsF16Kv) { CheckGreedy(KvDtype::kF16, 64); }
TEST(GoldenTest, GreedyIdsInt8KvFirst16) { CheckGreedy(KvDtype::kInt8, 16); }

TEST(GoldenTest, TeacherForcedTop5Logits) {
  KV_REQUIRE_MODEL(StoriesPath());
  auto m = testing::LoadForTest(StoriesPath());
  ThreadPool pool(2);
  const nlohmann::json golden = Golden();  // Named: a temporary would die before the loop body.
  for (const auto& c : golden["cases"]) {
    auto ids = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto out = c["output_token_ids"].get<std::vector<int32_t>>();
    ids.insert(ids.end(), out.begin(), out.end());
    ids.resize(16);
    auto kv = testing::MakeKv(*m.model, KvDtype::kF16, 512);
    GenerateOptions o;
    o.max_new_tokens = 1;
    o.sampling.temperature = 0;
    o.top_logits = 5;
    auto r = Generate(*m.model, *kv, pool, 1, ids, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto& top5 = c["teacher_forced_top5"];
    ASSERT_EQ(r->prompt_top_logits.size(), top5.size());
    for (size_t i = 0; i < top5.size(); ++i) {
      ASSERT_EQ(top5[i]["pos"].get<size_t>(), i);
      for (const auto& entry : top5[i]["top5"]) {
        const int32_t id = entry[0].get<int32_t>();
        const float logit = entry[1].get<float>();
        // Find our logit of that token among our top-5 (the sets must agree, up to ties).
        bool found = false;
        for (const auto& [our_id, our_logit] : r->prompt_top_logits[i]) {
          if (our_id == id) {
            found = true;
            EXPECT_NEAR(our_logit, logit, kGoldenLogitTolerance) << "position " << i;
          }
        }
        EXPECT_TRUE(found) << "position " << i << ": token " << id << " not in our top-5";
      }
    }
  }
}

}  // namespace
}  // namespace kvengine
