// Architecture registry: GGUF `general.architecture` -> the reader of its hyper-parameters. Every
// architecture runs the same forward pass (decoder_model.h); adding one is adding its reader file
// (architectures.h) and one line here.
#include <string_view>

#include "model/architectures.h"
#include "model/decoder_model.h"
#include "model/model.h"

namespace kvengine {
namespace {

using HParamsReader = Result<DecoderHParams> (*)(const GgufFile&, std::string);

struct Architecture {
  std::string_view name;
  HParamsReader read;
};

constexpr Architecture kArchitectures[] = {
    {"llama", &ReadLlamaHParams}, {"mistral", &ReadLlamaHParams},  // Same graph; the window comes
                                                                   // from the metadata.
    {"qwen2", &ReadQwen2HParams}, {"gemma2", &ReadGemma2HParams}, {"gemma3", &ReadGemma3HParams},
};

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(std::shared_ptr<const GgufFile> file, std::string name) {
  KV_ASSIGN_OR_RETURN(std::string_view arch, file->Architecture());
  for (const Architecture& a : kArchitectures) {
    if (a.name != arch) continue;
    KV_ASSIGN_OR_RETURN(DecoderHParams hp, a.read(*file, std::move(name)));
    return LoadDecoderModel(std::move(file), std::move(hp));
  }
  std::string known;
  for (const Architecture& a : kArchitectures)
    known += (known.empty() ? "" : ", ") + std::string(a.name);
  return InvalidArgument("architecture '" + std::string(arch) +
                         "' is not supported (supported: " + known + ")");
}

std::vector<std::string> SupportedArchitectures() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.emplace_back(a.name);
  return names;
}

}  // namespace kvengine
