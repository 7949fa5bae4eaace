#include "cli_flags.h"

#include <cstdio>
#include <filesystem>

#include "base/size_parse.h"
#include "gguf/gguf_reader.h"
#include "input_files.h"
#include "model/gguf_config.h"
#include "model/presets.h"
#include "synth/synthetic_spec.h"

namespace kvengine::cli {

CLI::Validator SizeCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Result<uint64_t> n = ParseSize(text);
        if (!n.ok()) return n.status().message();
        if (*n > (uint64_t{1} << 50)) return text + " is more than 1PiB";
        return "";
      },
      "SIZE");
}

CLI::Validator TokenCountCheck(uint64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        Result<uint64_t> n = ParseTokenCount(text);
        if (!n.ok()) return n.status().message();
        if (*n < min || *n > max) {
          return text + " is not in " + std::to_string(min) + ".." + std::to_string(max);
        }
        return "";
      },
      "TOKENS");
}

CLI::Validator KvDtypeCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Result<KvDtype> d = ParseKvDtype(text);
        return d.ok() ? "" : d.status().message();
      },
      "DTYPE");
}

void AddModelFlag(CLI::App* app, CommonFlags* f) {
  std::string presets;
  for (const std::string& n : PresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  app->add_option("-m,--model", f->model,
                  "Model: a GGUF file path or a built-in preset (" + presets + ")")
      ->capture_default_str();
}

void AddCtxFlag(CLI::App* app, CommonFlags* f) {
  app->add_option("-c,--ctx,--max-model-len", f->ctx,
                  "Tokens per sequence, prompt plus output (e.g. 4096 or 32k); default: the "
                  "model's context length")
      ->check(TokenCountCheck(1, uint64_t{1} << 32));
}

void AddKvFlags(CLI::App* app, CommonFlags* f) {
  app->add_option("--kv-dtype,--kv-cache-dtype", f->kv_dtype,
                  "KV cache number format for every layer: f32, f16, bf16, fp8_e4m3 (fp8), "
                  "fp8_e5m2, int8, int4")
      ->check(KvDtypeCheck())
      ->capture_default_str();
  app->add_option("--kv-dtype-map,--kv-plan", f->kv_dtype_map_file,
                  "The KV dtype map: a JSON file of per-layer KV dtypes, e.g. {\"default\": "
                  "\"int8\", \"layers\": {\"0-1\": \"f16\", \"31\": {\"k\": \"f16\", \"v\": "
                  "\"int4\"}}}; overrides --kv-dtype (a regular file of at most 1 MiB)");
  app->add_option("--block-size", f->block_size, "Tokens per KV block (1-256)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

void AddMemFlag(CLI::App* app, CommonFlags* f, const std::string& help) {
  app->add_option("--mem", f->mem, help + " (sizes take suffixes: 512MiB, 24GiB, 2GB)")
      ->check(SizeCheck());
}

void AddJsonFlag(CLI::App* app, CommonFlags* f) {
  app->add_flag("--json", f->json, "Print one JSON document on stdout instead of text");
}

void AddMmapFlag(CLI::App* app, CommonFlags* f) {
  app->add_flag("--mmap", f->mmap,
                "Map the GGUF file instead of reading it into huge-page memory: starts at once and "
                "shares the page cache, but decodes about half as fast (4 KiB pages)");
}

Result<ResolvedModel> ResolveModel(const std::string& model) {
  if (IsModelPath(model)) {
    KV_RETURN_IF_ERROR(CheckRegularFile(model, "model"));
    KV_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(model));
    const std::string name = std::filesystem::path(model).filename().string();
    KV_ASSIGN_OR_RETURN(ModelConfig config, ModelConfigFromGguf(*file, name));
    return ResolvedModel{std::move(config), GgufFingerprint(*file)};
  }
  Result<ModelConfig> preset = FindPreset(model);
  if (preset.ok()) return ResolvedModel{std::move(preset).value(), "preset:" + model};
  // A synthetic preset (tiny, small, llama-1b, ...): the shape `run` would generate.
  Result<SyntheticModelSpec> synth = ParseSyntheticSpec(model);
  if (!synth.ok()) {
    std::string shapes, synthetic;
    for (const std::string& n : PresetNames()) shapes += (shapes.empty() ? "" : ", ") + n;
    for (const std::string& n : SyntheticPresetNames()) {
      synthetic += (synthetic.empty() ? "" : ", ") + n;
    }
    return NotFound("no model '" + model + "': not a file, a model shape (" + shapes +
                    ") or a synthetic preset (" + synthetic + ")");
  }
  ModelConfig c;
  c.name = synth->name;
  c.architecture = synth->architecture;
  c.n_layers = synth->n_layers;
  c.n_embd = synth->n_embd;
  c.n_heads = synth->n_heads;
  c.n_kv_heads = synth->n_kv_heads;
  c.head_dim_k = c.head_dim_v = synth->HeadDim();
  c.context_length = synth->context_length;
  c.sliding_window = synth->sliding_window;
  c.window_pattern = WindowPatternOf(c.architecture);  // As ModelConfigFromGguf reads the file.
  return ResolvedModel{std::move(c), "synthetic:" + SyntheticSpecString(*synth)};
}

Result<KvDtypeMap> ResolveKvDtypes(const CommonFlags& f, int n_layers) {
  if (!f.kv_dtype_map_file.empty()) {
    KV_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(f.kv_dtype_map_file, kMaxConfigFileBytes,
                                                        "--kv-dtype-map"));
    Result<KvDtypeMap> m = ParseKvDtypeMap(text, n_layers);
    if (!m.ok()) return InvalidArgument(f.kv_dtype_map_file + ": " + m.status().message());
    return m;
  }
  Result<KvDtype> d = ParseKvDtype(f.kv_dtype);
  if (!d.ok()) return InvalidArgument("--kv-dtype: " + d.status().message());
  return UniformDtypes(*d);
}

Result<int64_t> ResolveCtx(const CommonFlags& f, const ModelConfig& model) {
  if (f.ctx.empty()) return model.context_length;
  Result<uint64_t> n = ParseTokenCount(f.ctx);
  if (!n.ok()) return InvalidArgument("--ctx: " + n.status().message());
  if (*n < 1 || *n > (uint64_t{1} << 32)) return OutOfRange("--ctx must be 1..4294967296");
  return static_cast<int64_t>(*n);
}

Result<std::optional<uint64_t>> ResolveMem(const CommonFlags& f) {
  if (f.mem.empty()) return std::optional<uint64_t>();
  Result<uint64_t> m = ParseSize(f.mem);
  if (!m.ok()) return InvalidArgument("--mem: " + m.status().message());
  return std::optional<uint64_t>(*m);
}

int Fail(const Status& status) {
  std::fprintf(stderr, "kvengine: %s\n", status.message().c_str());
  return 1;
}

int FailUsage(const Status& status) {
  std::fprintf(stderr, "kvengine: %s\n", status.message().c_str());
  return 2;
}

}  // namespace kvengine::cli
