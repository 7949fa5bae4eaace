// A model whose wide float matrices are loaded in column blocks (KernelLoadOptions, the default of
// `kvengine run`, `serve`, `bench`) decodes exactly as the same file mapped in ggml rows: the same
// greedy tokens and the same logits bits, in f32, f16 and bf16 weights. Two shapes: the tiny
// preset with a 2112-wide feed-forward (its down projections in 2 blocks) and a one-layer model
// 2112 wide with tied embeddings (every matrix in blocks, the embedding lookup gathering its row
// from them and the logits reading them as the output matrix). The same for quantized weights
// past 8192 columns.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "quant/weight_view.h"
#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"

namespace kvengine {
namespace {

// `text` (a synthetic preset) loaded in column blocks and mapped in ggml rows: the same greedy
// tokens and last logits.
void ExpectBlocksDecodeAsRows(const std::string& text) {
  ThreadPool pool(2);
  std::vector<int32_t> prompt = {1};
  for (int i = 1; i < 40; ++i) prompt.push_back(3 + (i * 37) % 500);
  {
    {
      SCOPED_TRACE(text);
      const std::string path = testing::SyntheticForTest(text, "column_blocks");
      const testing::LoadedModel rows =
          testing::LoadForTest(path, GgufFile::LoadMode::kMap, KernelLoadOptions());
      const testing::LoadedModel blocks =
          testing::LoadForTest(path, GgufFile::LoadMode::kRead, KernelLoadOptions());
      int blocked = 0;
      for (const GgufTensor& t : blocks.file->tensors()) blocked += t.column_block > 0 ? 1 : 0;
      for (const GgufTensor& t : rows.file->tensors()) EXPECT_EQ(t.column_block, 0);
      EXPECT_GT(blocked, 0);
      GenerateOptions o = testing::GreedyOptions(12);
      o.prefill_chunk = 16;  // Chunks of 16 and 8: the token tiles; decode: the streams.
      auto kv_rows = testing::MakeKv(*rows.model, KvDtype::kF16, 512);
      auto kv_blocks = testing::MakeKv(*blocks.model, KvDtype::kF16, 512);
      auto want = Generate(*rows.model, *kv_rows, pool, 1, prompt, o);
      auto got = Generate(*blocks.model, *kv_blocks, pool, 1, prompt, o);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->output_ids, want->output_ids);
      EXPECT_EQ(got->last_logits, want->last_logits);
      std::filesystem::remove(path);
    }
  }
}

TEST(ColumnBlocksE2eTest, BlocksDecodeAsRows) {
  for (const std::string& shape :
       {std::string(",n_ff=2112"),
        std::string(",n_embd=2112,n_ff=64,n_layers=1,tied_output=true")}) {
    for (const char* type : {"f32", "f16", "bf16"}) {
      ExpectBlocksDecodeAsRows(std::string("tiny:weight_type=") + type + shape);
    }
  }
}

// The quantized types, whose matrices go in blocks beyond 8192 columns: a feed-forward 8448 wide
// (down projections in 2 blocks of 4352 and 4096) in Q8_0 and Q5_1 (a min term per block) and
// in Q4_K (the K-quants' carried sum; n_embd 256 for its super-blocks).
TEST(ColumnBlocksE2eTest, QuantizedBlocksDecodeAsRows) {
  for (const char* type : {"q8_0", "q5_1"}) {
    ExpectBlocksDecodeAsRows(std::string("tiny:weight_type=") + type + ",n_ff=8448");
  }
  ExpectBlocksDecodeAsRows("tiny:weight_type=q4_K,n_embd=256,n_ff=8448");
}

}  // namespace
}  // namespace kvengine
