#include "tokenizer/tokenizer_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

namespace kvengine::tokenizer_test {

VocabSpec LlamaStyleVocab(const std::vector<std::pair<std::string, float>>& pieces,
                          bool with_bytes) {
  VocabSpec spec;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.scores = {0.0f, 0.0f, 0.0f};
  spec.types = {2, 3, 3};
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      spec.tokens.emplace_back(buf);
      spec.scores.push_back(0.0f);
      spec.types.push_back(6);
    }
  }
  for (const auto& [text, score] : pieces) {
    spec.tokens.push_back(text);
    spec.scores.push_back(score);
    spec.types.push_back(1);
  }
  return spec;
}

GgufWriter WriterFor(const VocabSpec& spec) {
  GgufWriter w;
  EXPECT_TRUE(w.AddString("tokenizer.ggml.model", "llama").ok());
  EXPECT_TRUE(w.AddStringArray("tokenizer.ggml.tokens", spec.tokens).ok());
  EXPECT_TRUE(w.AddArray("tokenizer.ggml.scores", std::span<const float>(spec.scores)).ok());
  EXPECT_TRUE(w.AddArray("tokenizer.ggml.token_type", std::span<const int32_t>(spec.types)).ok());
  EXPECT_TRUE(w.AddU32("tokenizer.ggml.bos_token_id", 1).ok());
  EXPECT_TRUE(w.AddU32("tokenizer.ggml.eos_token_id", 2).ok());
  EXPECT_TRUE(w.AddU32("tokenizer.ggml.unknown_token_id", 0).ok());
  return w;
}

std::unique_ptr<GgufFile> ToFile(const GgufWriter& writer) {
  Result<std::vector<uint8_t>> bytes = writer.WriteToBytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  if (!bytes.ok()) return nullptr;
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

std::string ModelsDir() {
  if (const char* dir = std::getenv("KVENGINE_MODELS_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return std::string(KVENGINE_SOURCE_DIR) + "/../shared/models";
}

bool ModelsRequired() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

}  // namespace kvengine::tokenizer_test
