#include "synth/model_cache.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "gguf/gguf_reader.h"

namespace kvengine {
namespace {

namespace fs = std::filesystem;

// True when `path` is a regular file of `expected_bytes` that parses as GGUF.
bool IsUsable(const std::string& path, uint64_t expected_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size != expected_bytes) return false;
  return GgufFile::Open(path).ok();
}

bool NonEmpty(const char* s) { return s != nullptr && s[0] != '\0'; }

}  // namespace

std::string SyntheticModelCachePath(const SyntheticModelSpec& spec, const std::string& cache_dir) {
  return (fs::path(cache_dir) / fmt::format("{}-{}.gguf", spec.name, SyntheticSpecHash(spec)))
      .string();
}

Result<std::string> EnsureSyntheticModel(const SyntheticModelSpec& spec,
                                         const std::string& cache_dir,
                                         const SyntheticProgressFn& progress) {
  KV_RETURN_IF_ERROR(spec.Validate());
  const std::string path = SyntheticModelCachePath(spec, cache_dir);
  const uint64_t expected = SyntheticModelBytes(spec);
  if (IsUsable(path, expected)) return path;

  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) {
    return InvalidArgument(
        fmt::format("cannot create cache folder {}: {}", cache_dir, ec.message()));
  }
  // WriteSyntheticModel itself goes through "<temp>.tmp"; the process id keeps two processes
  // filling the same cache from writing into one temporary file.
  const std::string temp = fmt::format("{}.{}.partial", path, static_cast<long>(::getpid()));
  Status status = WriteSyntheticModel(spec, temp, progress);
  if (status.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    status = Internal(fmt::format("cannot rename {} to {}", temp, path));
  }
  if (!status.ok()) {
    std::remove(temp.c_str());
    return status;
  }
  if (!IsUsable(path, expected)) {
    return Internal(fmt::format("{}: the file just written does not read back", path));
  }
  return path;
}

std::string DefaultCacheDir(const char* kvengine_cache, const char* xdg_cache_home,
                            const char* home) {
  if (NonEmpty(kvengine_cache)) return kvengine_cache;
  if (NonEmpty(xdg_cache_home) && xdg_cache_home[0] == '/') {
    return (fs::path(xdg_cache_home) / "kvengine").string();
  }
  if (NonEmpty(home)) return (fs::path(home) / ".cache" / "kvengine").string();
  return ".kvengine-cache";
}

}  // namespace kvengine
