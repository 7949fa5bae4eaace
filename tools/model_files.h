// Finding the GGUF file a command runs: a path, or a synthetic preset generated once into the
// cache folder ($KVENGINE_CACHE, else $XDG_CACHE_HOME/kvengine, else ~/.cache/kvengine).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "synth/synthetic_spec.h"

namespace kvengine::cli {

struct ModelFile {
  std::string path;
  bool synthetic = false;  // Random weights: the text it writes is meaningless.
  std::shared_ptr<const GgufFile> file;
};

// What -m names, without reading or generating anything: nothing for a GGUF path (which must be
// a regular file: a FIFO or a device is refused here, never opened), or the synthetic preset's
// spec with its overrides applied.
Result<std::optional<SyntheticModelSpec>> ResolveModelSource(const std::string& model);

// `model` is a GGUF path or a synthetic preset name (tiny, small, llama-1b, ...), optionally with
// overrides "preset:key=value,key=value". Generating shows a progress bar on a terminal. The file
// is read into huge-page memory unless `mode` says map (see GgufFile::LoadMode), its wide float
// matrices stored in column blocks there (KernelLoadOptions, quant/weight_view.h).
Result<ModelFile> OpenModelFile(const std::string& model,
                                GgufFile::LoadMode mode = GgufFile::LoadMode::kRead);

}  // namespace kvengine::cli
