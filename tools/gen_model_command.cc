// `kvengine gen-model`: writes a synthetic model (random weights of a realistic shape, like vLLM's
// dummy load format) as a GGUF file.
#include <cstdio>
#include <memory>

#include "base/size_parse.h"
#include "cli_flags.h"
#include "commands.h"
#include "input_files.h"
#include "progress.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine::cli {
namespace {

struct GenModelFlags {
  std::string preset = "tiny";
  std::string overrides;
  std::string output;
};

int RunGenModel(const GenModelFlags& f) {
  Result<SyntheticModelSpec> spec = FindSyntheticPreset(f.preset);
  if (!spec.ok()) return Fail(spec.status());
  if (!f.overrides.empty()) {
    Status s = ApplySyntheticOverrides(f.overrides, &*spec);
    if (!s.ok()) return Fail(s);
  }
  const std::string out = f.output.empty() ? spec->name + ".gguf" : f.output;
  if (Status s = CheckOutputFile(out, "--output"); !s.ok()) return Fail(s);
  ProgressBar bar("writing " + out);
  Status s = WriteSyntheticModel(*spec, out, [&bar](uint64_t d, uint64_t t) {
    bar.Update(int64_t(d), int64_t(t));
  });
  bar.Finish();
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s: %s, %.1fM parameters, %s\n", out.c_str(), SyntheticSpecString(*spec).c_str(),
              double(SyntheticModelParams(*spec)) / 1e6, FormatBytes(SyntheticModelBytes(*spec)).c_str());
  return 0;
}

}  // namespace

void RegisterGenModelCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<GenModelFlags>();
  std::string presets;
  for (const std::string& n : SyntheticPresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  std::string keys;
  for (const std::string& k : SyntheticSpecKeys()) keys += (keys.empty() ? "" : ", ") + k;
  CLI::App* cmd = app.add_subcommand(
      "gen-model", "Write a synthetic model (random weights, realistic shape) as a GGUF file");
  cmd->add_option("-m,--model,--preset", f->preset, "Synthetic preset: " + presets)
      ->capture_default_str();
  cmd->add_option("--set", f->overrides,
                  "Override fields, e.g. n_layers=4,weight_type=q8_0 (fields: " + keys +
                      "). weight_type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 (matrix rows "
                      "n_embd, n_ff, n_heads * head_dim multiples of 32), q4_K, q5_K, q6_K "
                      "(multiples of 256: small, llama-1b, or e.g. tiny with n_embd=256,n_ff=512)");
  cmd->add_option("-o,--output", f->output, "Output path (default: <preset>.gguf)");
  cmd->callback([f, exit_code] { *exit_code = RunGenModel(*f); });
}

}  // namespace kvengine::cli
