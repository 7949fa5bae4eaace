#include "server/engine_server_fixture.h"

#include <filesystem>
#include <string>
#include <utility>

#include "base/check.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"

namespace kvengine::server {

const TinyFiles& Tiny() {
  static const TinyFiles* t = [] {
    auto* files = new TinyFiles;
    Result<SyntheticModelSpec> spec = FindSyntheticPreset("tiny");
    KV_CHECK(spec.ok());
    const std::string dir =
        (std::filesystem::path(::testing::TempDir()) / "kvengine_server_test").string();
    Result<std::string> path = EnsureSyntheticModel(*spec, dir);
    KV_CHECK(path.ok()) << path.status().ToString();
    Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(*path);
    KV_CHECK(file.ok());
    files->file = std::shared_ptr<const GgufFile>(std::move(file).value());
    Result<std::unique_ptr<Model>> model = LoadModel(files->file, "tiny");
    KV_CHECK(model.ok()) << model.status().ToString();
    files->model = std::shared_ptr<const Model>(std::move(model).value());
    Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*files->file);
    KV_CHECK(tok.ok());
    files->tokenizer = std::move(tok).value();
    return files;
  }();
  return *t;
}

}  // namespace kvengine::server
