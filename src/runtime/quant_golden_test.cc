// Weight types against llama.cpp: the random-weight model of ../shared/models/quant in every weight
// type there (f16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and the Q4_K_M / Q5_K_M mixes)
// must reproduce llama.cpp's teacher-forced logits within 0.1: an independent implementation
// of every block layout checking ours.
//
// Like llama.cpp, the quantized weight types multiply activations quantized to q8_0 / q8_1 / q8_K
// (kernels/quant_dot.h), so at position 0, where attention is the identity on one token's V, every
// quantized file reproduces llama.cpp's logits to 1e-6 (f16: 0.002, as llama.cpp rounds
// activations to f16 for f16 weights and we keep them f32). After position 0 llama.cpp's own
// attention rounding decides: it runs ggml's CPU flash attention, which rounds the query to f16
// and keeps its running sum of V rows in f16, rounded at every position. Those ~1e-4 changes flip
// codes of the next q8 activation rounding, each flip moving logits by 0.02-0.05. So the files
// are compared twice:
//   - with llama.cpp's rounding (ForwardNumerics::kLlamaCppCpu, model/llamacpp_numerics.h),
//     within kQuantGoldenTolerance. Measured (every kernel target gives the same bits): f16
//     0.0044, Q8_0 0.014, Q4_0 0.079, Q4_1 0.036, Q5_0 0.052, Q5_1 0.059, Q4_K 0.051, Q5_K 0.045,
//     Q6_K 0.071, Q4_K_M 0.073, Q5_K_M 0.023; 69 of the 150 quantized positions after position 0
//     agree to 1e-4 (printed as "agree").
//   - with the engine's exact f32 attention, within kExactAttentionTolerance. Measured: f16
//     0.0055, Q8_0 0.074, Q4_0 0.055, Q4_1 0.069, Q5_0 0.069, Q5_1 0.061, Q4_K 0.115, Q5_K 0.087,
//     Q6_K 0.138, Q4_K_M 0.097, Q5_K_M 0.110; no position after 0 agrees.
// What still differs with llama.cpp's rounding starts at isolated positions (about one per file)
// and then persists through the KV cache. Not from q, k and v: the onsets stay put under +-4-ulp
// noise added to them. Most likely an activation within ~1e-4 of a q8 rounding boundary (Q5_0's
// onset, position 1, has FFN-down inputs that close), where few-ulp differences of summation order
// elsewhere (matmul, norms, SiLU) decide the code. A wrong block layout errs far more: weight
// quantization alone moves llama.cpp's own logits from its f16 ones by up to 0.16 (Q6_K) ... 0.88
// (Q4_K), and those moves are reproduced here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "model/architectures.h"
#include "model/decoder_model.h"
#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"

namespace kvengine {
namespace {

using testing::ModelsDir;

constexpr float kQuantGoldenTolerance = 0.1f;
// The engine's own attention does not round to f16; the roundings it skips move these logits by
// up to 0.14 (above). Still far below what a wrong layout does (order 1).
constexpr float kExactAttentionTolerance = 0.2f;
// A position "agrees" when all of its listed logits are this close (golden.json has 6 decimals).
constexpr float kAgreement = 1e-4f;

struct Comparison {
  float max_error = 0;
  float pos0 = 0;     // Max error at position 0.
  int agreeing = 0;   // Positions after 0 whose listed logits all agree within kAgreement.
  int positions = 0;  // Positions after 0.
};

// Teacher-forces the first 16 tokens of case `c` through `model` (f16 KV, as llama.cpp's default)
// and compares llama.cpp's top-5 logits of every position with ours.
Comparison Compare(const Model& model, const nlohmann::json& c, float tolerance) {
  Comparison cmp;
  ThreadPool pool(2);
  auto ids = c["prompt_token_ids"].get<std::vector<int32_t>>();
  const auto out = c["output_token_ids"].get<std::vector<int32_t>>();
  ids.insert(ids.end(), out.begin(), out.end());
  ids.resize(16);
  auto kv = testing::MakeKv(model, KvDtype::kF16, 256);
  GenerateOptions o;
  o.max_new_tokens = 1;
  o.sampling.temperature = 0;
  o.top_logits = int(model.n_vocab());  // All logits, by id below.
  auto r = Generate(model, *kv, pool, 1, ids, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return cmp;
  for (const auto& pos : c["teacher_forced_top5"]) {
    const size_t i = pos["pos"].get<size_t>();
    EXPECT_LT(i, r->prompt_top_logits.size());
    if (i >= r->prompt_top_logits.size()) continue;
    float pos_error = 0;
    for (const auto& entry : pos["top5"]) {
      const int32_t id = entry[0].get<int32_t>();
      float ours = 0;
      for (const auto& [tid, logit] : r->prompt_top_logits[i]) {
        if (tid == id) ours = logit;
      }
      pos_error = std::max(pos_error, std::fabs(ours - entry[1].get<float>()));
      EXPECT_NEAR(ours, entry[1].get<float>(), tolerance) << "position " << i << " token " << id;
    }
    cmp.max_error = std::max(cmp.max_error, pos_error);
    if (i == 0) {
      cmp.pos0 = pos_error;
    } else {
      ++cmp.positions;
      cmp.agreeing += pos_error <= kAgreement;
    }
  }
  return cmp;
}

TEST(QuantGoldenTest, SupportedWeightTypesMatchLlamaCppLogits) {
  const auto dir = ModelsDir() / "quant";
  KV_REQUIRE_MODEL(dir / "golden.json");
  std::ifstream in(dir / "golden.json");
  const auto golden = nlohmann::json::parse(in);
  int checked = 0;
  int agreeing = 0, positions = 0;
  for (const auto& c : golden["cases"]) {
    const std::string file = c["model_file"].get<std::string>();
    const std::string type = c["weight_type"].get<std::string>();
    SCOPED_TRACE(file);
    auto f = GgufFile::Open((dir / file).string());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const std::shared_ptr<const GgufFile> gguf(std::move(f).value());
    const auto arch = gguf->Architecture();
    ASSERT_TRUE(arch.ok() && *arch == "llama") << "read as llama below";
    auto hp = ReadLlamaHParams(*gguf, file);
    ASSERT_TRUE(hp.ok()) << hp.status().ToString();
    auto exact = LoadDecoderModel(gguf, *hp);
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    auto llamacpp = LoadDecoderModel(gguf, *hp, {.numerics = ForwardNumerics::kLlamaCppCpu});
    ASSERT_TRUE(llamacpp.ok()) << llamacpp.status().ToString();
    Comparison e, l;
    {
      SCOPED_TRACE("llama.cpp rounding");
      l = Compare(**llamacpp, c, kQuantGoldenTolerance);
    }
    {
      SCOPED_TRACE("exact attention");
      e = Compare(**exact, c, kExactAttentionTolerance);
    }
    std::printf("%-24s %-7s max |logit - llama.cpp| = %.4f with llama.cpp rounding ", file.c_str(),
                type.c_str(), l.max_error);
    std::printf("(position 0: %.4f, agree %2d/%d), %.4f exact\n", l.pos0, l.agreeing, l.positions,
                e.max_error);
    if (type != "f16") {
      agreeing += l.agreeing;
      positions += l.positions;
    }
    ++checked;
  }
  std::printf("quantized files: %d of %d positions after 0 agree with llama.cpp to %g\n", agreeing,
              positions, double(kAgreement));
  EXPECT_EQ(checked, static_cast<int>(golden["cases"].size()));
  EXPECT_GE(checked, 11);
}

}  // namespace
}  // namespace kvengine
