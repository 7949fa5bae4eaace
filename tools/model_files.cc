#include "model_files.h"

#include <cstdlib>
#include <filesystem>

#include "quant/weight_view.h"
#include "progress.h"
#include "synth/model_cache.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine::cli {

Result<ModelFile> OpenModelFile(const std::string& model, GgufFile::LoadMode mode) {
  ModelFile m;
  std::error_code ec;
  const bool looks_like_file = model.size() > 5 && model.substr(model.size() - 5) == ".gguf";
  if (looks_like_file || std::filesystem::is_regular_file(model, ec)) {
    m.path = model;
  } else {
    const size_t colon = model.find(':');
    KV_ASSIGN_OR_RETURN(SyntheticModelSpec spec, FindSyntheticPreset(model.substr(0, colon)));
    if (colon != std::string::npos) {
      KV_RETURN_IF_ERROR(ApplySyntheticOverrides(model.substr(colon + 1), &spec));
    }
    const std::string cache = DefaultCacheDir(std::getenv("KVENGINE_CACHE"),
                                              std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
    ProgressBar bar("generating " + spec.name);
    KV_ASSIGN_OR_RETURN(m.path, EnsureSyntheticModel(spec, cache, [&bar](uint64_t d, uint64_t t) {
                          bar.Update(int64_t(d), int64_t(t));
                        }));
    bar.Finish();
    m.synthetic = true;
  }
  KV_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f,
                      GgufFile::Open(m.path, mode, KernelLoadOptions()));
  m.file = std::move(f);
  return m;
}

}  // namespace kvengine::cli
