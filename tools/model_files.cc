#include "model_files.h"

#include <cstdlib>
#include <optional>

#include "input_files.h"
#include "quant/weight_view.h"
#include "progress.h"
#include "synth/model_cache.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine::cli {

Result<std::optional<SyntheticModelSpec>> ResolveModelSource(const std::string& model) {
  if (IsModelPath(model)) {
    // Checked before opening: a FIFO or a device is refused at once, never read.
    KV_RETURN_IF_ERROR(CheckRegularFile(model, "model"));
    return std::optional<SyntheticModelSpec>();
  }
  const size_t colon = model.find(':');
  KV_ASSIGN_OR_RETURN(SyntheticModelSpec spec, FindSyntheticPreset(model.substr(0, colon)));
  if (colon != std::string::npos) {
    KV_RETURN_IF_ERROR(ApplySyntheticOverrides(model.substr(colon + 1), &spec));
  }
  return std::optional<SyntheticModelSpec>(std::move(spec));
}

Result<ModelFile> OpenModelFile(const std::string& model, GgufFile::LoadMode mode) {
  ModelFile m;
  KV_ASSIGN_OR_RETURN(std::optional<SyntheticModelSpec> synthetic, ResolveModelSource(model));
  if (!synthetic) {
    m.path = model;
  } else {
    const SyntheticModelSpec& spec = *synthetic;
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
