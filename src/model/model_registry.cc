// Architecture registry: GGUF `general.architecture` -> loader. Adding an architecture is adding
// its file and one line here.
#include <string_view>

#include "model/llama_model.h"
#include "model/model.h"

namespace kvengine {
namespace {

using Loader = Result<std::unique_ptr<Model>> (*)(std::shared_ptr<const GgufFile>, std::string);

struct Architecture {
  std::string_view name;
  Loader load;
};

constexpr Architecture kArchitectures[] = {
    {"llama", &LoadLlamaModel},
    {"mistral", &LoadLlamaModel},  // Same graph; the window comes from the metadata.
};

}  // namespace

Result<std::unique_ptr<Model>> LoadModel(std::shared_ptr<const GgufFile> file, std::string name) {
  KV_ASSIGN_OR_RETURN(std::string_view arch, file->Architecture());
  for (const Architecture& a : kArchitectures) {
    if (a.name == arch) return a.load(std::move(file), std::move(name));
  }
  std::string known;
  for (const Architecture& a : kArchitectures) known += (known.empty() ? "" : ", ") + std::string(a.name);
  return InvalidArgument("architecture '" + std::string(arch) + "' is not supported (supported: " +
                         known + ")");
}

}  // namespace kvengine
