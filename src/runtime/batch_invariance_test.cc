// Optimized paths against the simple path they replace: chunked prefill vs whole-prompt prefill,
// prefix-cache-hit decode vs cold decode, mixed batches vs one sequence at a time. Kernels are
// batch-invariant, so all of these must agree bit for bit.
#include <gtest/gtest.h>

#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"

namespace kvengine {
namespace {

using testing::GreedyOptions;
using testing::ModelsDir;

std::vector<int32_t> Prompt(int n) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(259 + (i * 37) % 250);
  return p;
}

TEST(BatchInvarianceTest, ChunkedPrefillAndPrefixHitsGiveIdenticalTokens) {
  const auto path = ModelsDir() / "stories260K.gguf";
  KV_REQUIRE_MODEL(path);
  auto m = testing::LoadForTest(path);
  ThreadPool pool(2);
  const auto prompt = Prompt(70);
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16, KvDtype::kInt8, KvDtype::kInt4}) {
    SCOPED_TRACE(KvDtypeName(dtype));
    auto kv = testing::MakeKv(*m.model, dtype, 512);
    GenerateOptions o = GreedyOptions(24);
    auto cold = Generate(*m.model, *kv, pool, 1, prompt, o);
    ASSERT_TRUE(cold.ok()) << cold.status().ToString();
    // The same prompt again hits the prefix cache (64 of 70 tokens) and must decode the same.
    auto hit = Generate(*m.model, *kv, pool, 2, prompt, o);
    ASSERT_TRUE(hit.ok());
    EXPECT_EQ(hit->cached_prompt_tokens, 64);
    EXPECT_EQ(hit->output_ids, cold->output_ids);
    EXPECT_EQ(hit->last_logits, cold->last_logits);
    // Chunks of 5 on a fresh cache.
    auto kv2 = testing::MakeKv(*m.model, dtype, 512);
    o.prefill_chunk = 5;
    auto chunked = Generate(*m.model, *kv2, pool, 1, prompt, o);
    ASSERT_TRUE(chunked.ok());
    EXPECT_EQ(chunked->output_ids, cold->output_ids);
    EXPECT_EQ(chunked->last_logits, cold->last_logits);
  }
}

TEST(BatchInvarianceTest, MixedBatchEqualsOneAtATime) {
  const auto path = ModelsDir() / "stories260K.gguf";
  KV_REQUIRE_MODEL(path);
  auto m = testing::LoadForTest(path);
  ThreadPool pool(2);
  const auto a = Prompt(40), b = Prompt(13);
  auto kv = testing::MakeKv(*m.model, KvDtype::kF16, 512, 16, /*prefix=*/false);
  ASSERT_TRUE(kv->AddSequence(1).ok() && kv->AddSequence(2).ok());
  ASSERT_TRUE(kv->Append(1, a).ok && kv->Append(2, b).ok);
  const SeqChunk both[] = {{1, 0, a, true}, {2, 0, b, true}};
  ForwardOutput batched;
  ASSERT_TRUE(m.model->Forward(both, *kv, pool, &batched).ok());
  auto kv_single = testing::MakeKv(*m.model, KvDtype::kF16, 512, 16, false);
  ASSERT_TRUE(kv_single->AddSequence(2).ok());
  ASSERT_TRUE(kv_single->Append(2, b).ok);
  const SeqChunk only_b[] = {{2, 0, b, true}};
  ForwardOutput single;
  ASSERT_TRUE(m.model->Forward(only_b, *kv_single, pool, &single).ok());
  for (int64_t i = 0; i < int64_t(b.size()); ++i) {
    for (int64_t v = 0; v < single.n_vocab; ++v) {
      ASSERT_EQ(batched.Row(1, i)[v], single.Row(0, i)[v]) << "row " << i;
    }
  }
}

}  // namespace
}  // namespace kvengine
