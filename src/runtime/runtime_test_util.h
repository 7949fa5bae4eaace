// Shared helpers of the runtime tests: the shared models folder and model + KV setup.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "model/kv_groups.h"
#include "runtime/generator.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"

namespace kvengine::testing {

inline std::filesystem::path ModelsDir() {
  if (const char* env = std::getenv("KVENGINE_MODELS_DIR")) return env;
  return std::filesystem::path(KVENGINE_SOURCE_DIR) / ".." / "shared" / "models";
}

// The real stories260K model (llama.cpp's test model), when the models folder has it.
inline std::filesystem::path StoriesPath() { return ModelsDir() / "stories260K.gguf"; }

// Skips the test when the shared models are absent, but fails under CI=true.
#define KV_REQUIRE_MODEL(path)                                                          \
  do {                                                                                  \
    if (!std::filesystem::exists(path)) {                                               \
      const char* ci = std::getenv("CI");                                               \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "missing " << (path);   \
      GTEST_SKIP() << "no " << (path) << " (set KVENGINE_MODELS_DIR)";                  \
    }                                                                                   \
  } while (0)

struct LoadedModel {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Model> model;
};

// The synthetic model `spec_text` ("preset:key=value,...") written once into a folder of this
// test process under the test temp dir named after `tag`: its path.
inline std::string SyntheticForTest(const std::string& spec_text, const std::string& tag) {
  auto spec = ParseSyntheticSpec(spec_text);
  KV_CHECK(spec.ok()) << spec.status().ToString();
  const std::string dir = (std::filesystem::path(::testing::TempDir()) /
                           ("kvengine_" + tag + "_" + std::to_string(::getpid())))
                              .string();
  auto path = EnsureSyntheticModel(*spec, dir);
  KV_CHECK(path.ok()) << path.status().ToString();
  return *path;
}

inline LoadedModel LoadForTest(const std::filesystem::path& path,
                               GgufFile::LoadMode mode = GgufFile::LoadMode::kMap,
                               const GgufLoadOptions& options = {}) {
  LoadedModel m;
  auto f = GgufFile::Open(path.string(), mode, options);
  KV_CHECK(f.ok()) << f.status().ToString();
  m.file = std::shared_ptr<const GgufFile>(std::move(f).value());
  auto model = LoadModel(m.file, path.filename().string());
  KV_CHECK(model.ok()) << model.status().ToString();
  m.model = std::move(model).value();
  return m;
}

inline std::unique_ptr<KvCacheManager> MakeKv(const Model& model, KvDtype dtype, int64_t ctx,
                                              int block_size = 16, bool prefix = true,
                                              int32_t blocks = 256) {
  KvCacheConfig c;
  c.groups = *BuildKvGroups(model.config(), UniformDtypes(dtype));
  c.block_size = block_size;
  c.num_blocks = blocks;
  c.max_model_len = ctx;
  c.enable_prefix_caching = prefix;
  c.model_fingerprint = model.config().name;
  return std::move(KvCacheManager::Create(c)).value();
}

// Greedy decoding of `n` new tokens that does not stop at EOS.
inline GenerateOptions GreedyOptions(int64_t n) {
  GenerateOptions o;
  o.max_new_tokens = n;
  o.sampling.temperature = 0;
  o.stop_at_eos = false;
  return o;
}

}  // namespace kvengine::testing
