// Weight types against llama.cpp: the random-weight model of ../shared/models/quant in each
// weight type this runtime supports (f16, Q8_0) must reproduce llama.cpp's teacher-forced logits
// within 0.1; the types it does not support yet must fail to load with an error naming the type.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"

namespace kvengine {
namespace {

using testing::ModelsDir;

// llama.cpp quantizes activations inside its dot products; 0.1 absolute on logits of 3-5 is the
// budget its README gives (a wrong block layout errs by 1 or more).
constexpr float kQuantGoldenTolerance = 0.1f;

TEST(QuantGoldenTest, SupportedWeightTypesMatchLlamaCppLogits) {
  const auto dir = ModelsDir() / "quant";
  KV_REQUIRE_MODEL(dir / "golden.json");
  std::ifstream in(dir / "golden.json");
  const auto golden = nlohmann::json::parse(in);
  ThreadPool pool(2);
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    const std::string file = c["model_file"].get<std::string>();
    const std::string type = c["weight_type"].get<std::string>();
    SCOPED_TRACE(file);
    auto f = GgufFile::Open((dir / file).string());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    auto model = LoadModel(std::shared_ptr<const GgufFile>(std::move(f).value()), file);
    if (type != "f16" && type != "q8_0" && type != "Q8_0") {
      ASSERT_FALSE(model.ok()) << "expected " << type << " to be unsupported for now";
      EXPECT_NE(model.status().message().find("not supported"), std::string::npos)
          << model.status().message();
      continue;
    }
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto ids = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto out = c["output_token_ids"].get<std::vector<int32_t>>();
    ids.insert(ids.end(), out.begin(), out.end());
    ids.resize(16);
    auto kv = testing::MakeKv(**model, KvDtype::kF32, 256);
    GenerateOptions o;
    o.max_new_tokens = 1;
    o.sampling.temperature = 0;
    o.top_logits = int((*model)->n_vocab());  // All logits, by id below.
    auto r = Generate(**model, *kv, pool, 1, ids, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const auto& pos : c["teacher_forced_top5"]) {
      const size_t i = pos["pos"].get<size_t>();
      ASSERT_LT(i, r->prompt_top_logits.size());
      for (const auto& entry : pos["top5"]) {
        const int32_t id = entry[0].get<int32_t>();
        float ours = 0;
        for (const auto& [tid, logit] : r->prompt_top_logits[i]) {
          if (tid == id) ours = logit;
        }
        EXPECT_NEAR(ours, entry[1].get<float>(), kQuantGoldenTolerance)
            << "position " << i << " token " << id;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace kvengine
