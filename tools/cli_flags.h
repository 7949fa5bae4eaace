// Flags every kvengine subcommand shares, with one meaning everywhere:
//   -m, --model NAME|FILE.gguf        a built-in preset or a GGUF file
//   -c, --ctx, --max-model-len N      tokens per sequence (4096, 32k)
//   --kv-dtype, --kv-cache-dtype D    KV number format for every layer
//   --kv-dtype-map FILE               the KV dtype map: per-layer KV dtypes (JSON), overrides
//                                     --kv-dtype (old spelling --kv-plan stays accepted)
//   --block-size N                    tokens per KV block
//   --mem SIZE                        KV memory budget (512MiB, 24GiB)
//   --json                            machine-readable output on stdout
// Values are parsed once here, at the edge; libraries below receive typed options.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "model/kv_groups.h"
#include "model/model_config.h"

namespace kvengine::cli {

struct CommonFlags {
  std::string model = "llama-3-8b";
  std::string ctx;  // Empty: the model's context length.
  std::string kv_dtype = "f16";
  std::string kv_dtype_map_file;
  int block_size = 16;
  std::string mem;  // Empty: no budget.
  bool json = false;
  bool mmap = false;  // Map the GGUF instead of reading it into huge pages (GgufFile::LoadMode).
};

// CLI11 checks of values that are interpreted later, so that a malformed value is a usage error
// (exit 2) caught by the flag parser: a byte size ("512MiB", at most 1 PiB), a token count
// ("32k", min..max) and a KV dtype name.
CLI::Validator SizeCheck();
CLI::Validator TokenCountCheck(uint64_t min, uint64_t max);
CLI::Validator KvDtypeCheck();

// Registers the shared flags on a subcommand; `defaults` supplies per-command defaults.
void AddModelFlag(CLI::App* app, CommonFlags* f);
void AddCtxFlag(CLI::App* app, CommonFlags* f);
void AddKvFlags(CLI::App* app, CommonFlags* f);
void AddMemFlag(CLI::App* app, CommonFlags* f, const std::string& help);
void AddJsonFlag(CLI::App* app, CommonFlags* f);
void AddMmapFlag(CLI::App* app, CommonFlags* f);
inline GgufFile::LoadMode LoadModeOf(const CommonFlags& f) {
  return f.mmap ? GgufFile::LoadMode::kMap : GgufFile::LoadMode::kRead;
}

struct ResolvedModel {
  ModelConfig config;
  std::string fingerprint;  // GGUF header hash, or "preset:<name>".
};

// A preset name, or a path to a GGUF file (anything ending in .gguf or naming an existing file).
Result<ResolvedModel> ResolveModel(const std::string& model);
Result<KvDtypeMap> ResolveKvDtypes(const CommonFlags& f, int n_layers);
Result<int64_t> ResolveCtx(const CommonFlags& f, const ModelConfig& model);
Result<std::optional<uint64_t>> ResolveMem(const CommonFlags& f);

// Prints "kvengine: <message>" to stderr; returns the exit status for a failed command (1): an
// unusable input (a file missing, not a regular file, too large or invalid) or a runtime failure.
int Fail(const Status& status);
// The same for a malformed command line found after parsing (a missing or conflicting value):
// returns 2, as main() does for the flag parser's errors.
int FailUsage(const Status& status);

}  // namespace kvengine::cli
