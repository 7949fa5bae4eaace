#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "gguf/gguf_reader.h"
#include "model_config/gguf_config.h"
#include "model_config/kv_groups.h"
#include "model_config/presets.h"

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
