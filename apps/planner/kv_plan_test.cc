#include "planner/kv_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kv/kv_cache_manager.h"
#include "model/presets.h"

namespace kvengine {
namespace {

KvPlan Plan(const char* preset, KvDtype dtype, int64_t ctx, std::optional<uint64_t> mem = {},
            int block = 16) {
  PlanOptions o;
  o.ctx = ctx;
  o.block_size = block;
  o.memory_bytes = mem;
  auto p = PlanKv(*FindPreset(preset), UniformDtypes(dtype), o);
  KV_CHECK(p.ok()) << p.status().ToString();
  return *p;
}

TEST(KvPlanTest, PublishedFigures) {
  EXPECT_EQ(Plan("llama-2-7b", KvDtype::kF16, 4096).kv_bytes_per_token, 524288u);
  EXPECT_EQ(Plan("llama-2-7b", KvDtype::kF16, 4096).naive_bytes_per_token, 524288.0);
  EXPECT_EQ(Plan("llama-2-7b", KvDtype::kF16, 32768).kv_bytes_per_sequence, 16ull << 30);
  EXPECT_EQ(Plan("llama-3-8b", KvDtype::kF16, 8192).kv_bytes_per_token, 131072u);
  EXPECT_EQ(Plan("qwen2.5-7b", KvDtype::kF16, 8192).kv_bytes_per_token, 57344u);
  EXPECT_EQ(Plan("deepseek-llm-7b", KvDtype::kF16, 4096).kv_bytes_per_token, 491520u);
  // MLA: 576 elements per token per layer.
  EXPECT_EQ(Plan("deepseek-v3", KvDtype::kF16, 4096).kv_bytes_per_token, 61u * 576u * 2u);
  EXPECT_EQ(Plan("deepseek-v2-lite", KvDtype::kF16, 4096).kv_bytes_per_token, 27u * 576u * 2u);
  // int8: 1 byte per element plus a 2-byte f16 scale per 128-element row.
  EXPECT_EQ(Plan("llama-3-8b", KvDtype::kInt8, 8192).kv_bytes_per_token, 32u * 2u * 8u * 130u);
}

TEST(KvPlanTest, WindowBoundsMistralSequences) {
  const KvPlan p = Plan("mistral-7b", KvDtype::kF16, 32768);
  EXPECT_EQ(p.kv_bytes_per_token, 131072u);
  // 4096-token window + one block, not 32k tokens.
  EXPECT_EQ(p.kv_bytes_per_sequence, (4096u + 16u) * 131072u);
}

TEST(KvPlanTest, MemoryBudget) {
  const KvPlan p = Plan("llama-2-7b", KvDtype::kF16, 4096, 24ull << 30);
  EXPECT_EQ(p.max_tokens, 49152);
  EXPECT_EQ(p.max_sequences, 12);
  EXPECT_EQ(p.pool_bytes, 24ull << 30);
}

TEST(KvPlanTest, KvPlanFileParsesAndMixes) {
  auto m = ParseKvDtypeMap(R"({"default": "int8", "layers": {"0-1": "f16", "3": {"k": "f16", "v": "int4"}}})", 4);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->ForLayer(0).k, KvDtype::kF16);
  EXPECT_EQ(m->ForLayer(2).v, KvDtype::kInt8);
  EXPECT_EQ(m->ForLayer(3).v, KvDtype::kInt4);
  EXPECT_FALSE(ParseKvDtypeMap(R"({"layers": {"9": "f16"}})", 4).ok());
  EXPECT_FALSE(ParseKvDtypeMap(R"({"default": "int7"})", 4).ok());
  EXPECT_FALSE(ParseKvDtypeMap("not json", 4).ok());
  EXPECT_FALSE(ParseKvDtypeMap(R"({"defualt": "f16"})", 4).ok());
}

// The planner's numbers equal what the pool allocates for the same configuration.
void ExpectPlanEqualsAllocator(const char* preset, KvDtype dtype, int64_t ctx, uint64_t mem,
                               int block, KvGroupOptions group_options = {}) {
  SCOPED_TRACE(std::string(preset) + " " + std::string(KvDtypeName(dtype)) + " ctx " +
               std::to_string(ctx) + " block " + std::to_string(block));
  PlanOptions o;
  o.ctx = ctx;
  o.block_size = block;
  o.memory_bytes = mem;
  o.group_options = group_options;
  const ModelConfig model = *FindPreset(preset);
  const KvPlan p = *PlanKv(model, UniformDtypes(dtype), o);
  KvCacheConfig c;
  c.groups = *BuildKvGroups(model, UniformDtypes(dtype), group_options);
  c.block_size = block;
  c.memory_bytes = mem;
  c.max_model_len = ctx;
  c.enable_prefix_caching = false;
  c.allocate_storage = false;
  auto m = std::move(KvCacheManager::Create(c)).value();
  ASSERT_EQ(m->sizing().total_bytes, p.pool_bytes);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    EXPECT_EQ(m->group(int(g)).layout().bytes_per_block(), p.groups[g].bytes_per_block);
    EXPECT_EQ(m->group(int(g)).pool().num_blocks(), p.groups[g].num_blocks);
  }
  // Grow sequences to ctx, one block-sized chunk at a time, until the pool is full.
  std::vector<int32_t> chunk(size_t(block), 1);
  int64_t complete = 0;
  uint64_t peak_first = 0;
  for (SeqId id = 0;; ++id) {
    ASSERT_TRUE(m->AddSequence(id).ok());
    bool full = false;
    for (int64_t n = 0; n < ctx && !full; n += block) {
      const auto t = std::span<const int32_t>(chunk).first(size_t(std::min<int64_t>(block, ctx - n)));
      full = !m->Append(id, t).ok;
      // The peak is between append and compute: the chunk is in, the window not yet moved.
      if (id == 0) peak_first = std::max(peak_first, m->Stats().used_bytes);
      if (!full) {
        ASSERT_TRUE(m->MarkComputed(id, m->NumTokens(id)).ok());
      }
    }
    if (full) break;
    ++complete;
  }
  EXPECT_EQ(peak_first, p.kv_bytes_per_sequence);
  EXPECT_EQ(complete, p.max_sequences);
}

TEST(KvPlanTest, PlanEqualsAllocator) {
  ExpectPlanEqualsAllocator("llama-3-8b", KvDtype::kF16, 4096, 1ull << 30, 16);
  ExpectPlanEqualsAllocator("llama-2-7b", KvDtype::kInt8, 1000, 3ull << 29, 16);
  ExpectPlanEqualsAllocator("qwen2.5-7b", KvDtype::kInt4, 2048, 1ull << 28, 32);
  ExpectPlanEqualsAllocator("mistral-7b", KvDtype::kFp8E4M3, 8192, 1ull << 30, 16);
  ExpectPlanEqualsAllocator("gemma-2-9b", KvDtype::kF16, 6000, 2ull << 30, 16);
  ExpectPlanEqualsAllocator("deepseek-v2-lite", KvDtype::kF16, 4096, 1ull << 28, 16);
  KvGroupOptions streaming;
  streaming.streaming_window = 1024;
  streaming.sink_tokens = 4;
  ExpectPlanEqualsAllocator("llama-3-8b", KvDtype::kF16, 3000, 1ull << 28, 16, streaming);
}

TEST(KvPlanTest, NotesExplainTheDifference) {
  const KvPlan p = Plan("llama-3-8b", KvDtype::kInt8, 1000);
  bool gqa = false, scales = false, rounding = false;
  for (const std::string& n : p.notes) {
    gqa |= n.find("GQA") != std::string::npos;
    scales |= n.find("scales") != std::string::npos;
    rounding |= n.find("block rounding") != std::string::npos;
  }
  EXPECT_TRUE(gqa && scales && rounding);
}

}  // namespace
}  // namespace kvengine
