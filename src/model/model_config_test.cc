#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/gguf_config.h"
#include "model/kv_groups.h"
#include "model/presets.h"

namespace kvengine {
namespace {

std::filesystem::path ModelsDir() {
  if (const char* env = std::getenv("KVENGINE_MODELS_DIR")) return env;
  return std::filesystem::path(KVENGINE_SOURCE_DIR) / ".." / "shared" / "models";
}

TEST(PresetsTest, AllPresetsValidateAndUnknownNamesAreClear) {
  for (const std::string& name : PresetNames()) {
    auto c = FindPreset(name);
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->Validate().ok()) << name;
  }
  auto bad = FindPreset("llama-9000");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("llama-2-7b"), std::string::npos);
}

TEST(KvGroupsTest, HybridAndMlaGrouping) {
  auto gemma = BuildKvGroups(*FindPreset("gemma-3-12b"), UniformDtypes(KvDtype::kF16));
  ASSERT_TRUE(gemma.ok());
  ASSERT_EQ(gemma->size(), 2u);
  EXPECT_EQ((*gemma)[0].kind, KvGroupKind::kFull);
  EXPECT_EQ((*gemma)[0].layers.size(), 8u);  // Layers 5, 11, ..., 47.
  EXPECT_EQ((*gemma)[0].layers[0], 5);
  EXPECT_EQ((*gemma)[1].window, 1024);
  EXPECT_EQ((*gemma)[1].layers.size(), 40u);
  auto ds = BuildKvGroups(*FindPreset("deepseek-v3"), UniformDtypes(KvDtype::kInt8));
  ASSERT_TRUE(ds.ok());
  ASSERT_EQ(ds->size(), 1u);
  EXPECT_EQ((*ds)[0].kind, KvGroupKind::kMla);
  EXPECT_EQ((*ds)[0].head_dim_k, 576);
  KvGroupOptions streaming;
  streaming.sink_tokens = 4;
  EXPECT_FALSE(BuildKvGroups(*FindPreset("llama-2-7b"), UniformDtypes(KvDtype::kF16), streaming).ok());
}

TEST(KvGroupsTest, KvDtypeMapRejectsOverlappingLayerRanges) {
  // Each layer may be named once: overlapping ranges were accepted and counted twice.
  auto overlap = ParseKvDtypeMap(R"({"layers": {"0-3": "f16", "2-5": "int8"}})", 8);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(overlap.status().message(),
            "KV plan layers['2-5']: layer 2 is also in layers['0-3'] (ranges must not overlap)");
  auto single = ParseKvDtypeMap(R"({"layers": {"1-4": "f16", "4": "int8"}})", 8);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("layer 4 is also in layers['1-4']"), std::string::npos)
      << single.status().message();
  // Adjacent ranges are fine, and each layer is one override.
  auto adjacent =
      ParseKvDtypeMap(R"({"default": "int4", "layers": {"0-3": "f16", "4-5": "int8"}})", 8);
  ASSERT_TRUE(adjacent.ok()) << adjacent.status().ToString();
  EXPECT_EQ(adjacent->overrides.size(), 6u);
  EXPECT_EQ(adjacent->ForLayer(3).k, KvDtype::kF16);
  EXPECT_EQ(adjacent->ForLayer(4).v, KvDtype::kInt8);
  EXPECT_EQ(adjacent->ForLayer(6).k, KvDtype::kInt4);
}

// A metadata-only GGUF of `arch` with 4 layers of 64 (4 heads); `window` < 0 leaves the key out.
std::unique_ptr<GgufFile> HeaderOnly(const std::string& arch, int64_t window) {
  GgufWriter w;
  KV_CHECK(w.AddString("general.architecture", arch).ok());
  KV_CHECK(w.AddU32(arch + ".block_count", 4).ok());
  KV_CHECK(w.AddU32(arch + ".embedding_length", 64).ok());
  KV_CHECK(w.AddU32(arch + ".attention.head_count", 4).ok());
  if (window >= 0) KV_CHECK(w.AddU32(arch + ".attention.sliding_window", uint32_t(window)).ok());
  auto bytes = w.WriteToBytes();
  KV_CHECK(bytes.ok());
  auto f = GgufFile::FromBytes(*bytes);
  KV_CHECK(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

TEST(GgufConfigTest, WindowPatternsFollowTheArchitecture) {
  EXPECT_EQ(WindowPatternOf("gemma2"), 2);
  EXPECT_EQ(WindowPatternOf("gemma3"), 6);
  EXPECT_EQ(WindowPatternOf("llama"), 1);
  EXPECT_EQ(WindowPatternOf("qwen2"), 1);
  // gemma2 without the key means Gemma 2's 4096 (llama.cpp's default); others mean no window.
  auto g2 = ModelConfigFromGguf(*HeaderOnly("gemma2", -1), "g2");
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  EXPECT_EQ(g2->sliding_window, 4096);
  EXPECT_EQ(g2->window_pattern, 2);
  EXPECT_TRUE(g2->LayerWindowed(0));
  EXPECT_FALSE(g2->LayerWindowed(1));
  auto g3 = ModelConfigFromGguf(*HeaderOnly("gemma3", 512), "g3");
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ(g3->sliding_window, 512);
  EXPECT_EQ(g3->window_pattern, 6);
  auto g3_none = ModelConfigFromGguf(*HeaderOnly("gemma3", -1), "g3");
  ASSERT_TRUE(g3_none.ok());
  EXPECT_FALSE(g3_none->LayerWindowed(0));  // No key: every layer global.
  auto q = ModelConfigFromGguf(*HeaderOnly("qwen2", -1), "q");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->sliding_window, 0);
  // Two KV groups for the hybrid gemma2: the even (windowed) layers and the odd (global) ones.
  auto groups = BuildKvGroups(*g2, UniformDtypes(KvDtype::kF16));
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].layers, (std::vector<int>{1, 3}));
  EXPECT_EQ((*groups)[1].layers, (std::vector<int>{0, 2}));
  EXPECT_EQ((*groups)[1].window, 4096);
  // A window beyond int is a clear error naming the key, not a wrapped number.
  auto huge = ModelConfigFromGguf(*HeaderOnly("mistral", 0xFFFFFFFFll), "m");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("sliding_window"), std::string::npos);
}

TEST(GgufConfigTest, ReadsTheRealStoriesModel) {
  const auto path = ModelsDir() / "stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path << " (set KVENGINE_MODELS_DIR)";
  auto f = GgufFile::Open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto c = ModelConfigFromGguf(**f, "stories260K");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_EQ(c->n_layers, 5);
  EXPECT_EQ(c->n_embd, 64);
  EXPECT_EQ(c->n_heads, 8);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim_k, 8);
  EXPECT_EQ(GgufFingerprint(**f).size(), 64u);
}

}  // namespace
}  // namespace kvengine
