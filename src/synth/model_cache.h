// The synthetic-model cache: commands run without `-m` generate their default model once into a
// cache folder and reuse it afterwards.
//
// Cache layout: <cache_dir>/<spec.name>-<SyntheticSpecHash(spec)>.gguf. The hash covers every
// field and the generator version, so a changed spec or generator gets a new file and never a
// stale one. A file is reused only if it has exactly SyntheticModelBytes(spec) bytes and opens
// with GgufFile::Open; anything else (truncated, corrupt, foreign) is regenerated. Files are
// written under a process-unique temporary name and renamed into place, so an interrupted run
// never leaves a partial file under the cache name, and concurrent processes each produce a
// complete file (the last rename wins; the contents are identical).
//
// Pure functions over the filesystem; any thread, any number of processes.
#pragma once

#include <string>

#include "kvengine/status.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine {

// The cache path for `spec` inside `cache_dir` (no filesystem access).
std::string SyntheticModelCachePath(const SyntheticModelSpec& spec, const std::string& cache_dir);

// Returns the path of a complete, valid model file for `spec`, writing it first (creating
// cache_dir as needed) when it is absent or unusable. `progress` is called only when writing.
Result<std::string> EnsureSyntheticModel(const SyntheticModelSpec& spec,
                                         const std::string& cache_dir,
                                         const SyntheticProgressFn& progress = {});

// The cache folder from the environment, for the CLI to call with getenv's results (any may be
// null): $KVENGINE_CACHE if set and non-empty; else $XDG_CACHE_HOME/kvengine if that is an
// absolute path (the XDG spec says to ignore relative ones); else $HOME/.cache/kvengine; else
// ".kvengine-cache" in the working directory.
std::string DefaultCacheDir(const char* kvengine_cache, const char* xdg_cache_home,
                            const char* home);

}  // namespace kvengine
