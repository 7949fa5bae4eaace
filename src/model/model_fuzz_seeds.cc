// model_fuzz_seeds DIR: writes the seed corpus of model_fuzz (model_fuzz_format.h) into DIR:
// every preset unedited, and a few edits of each kind.
#include <optional>
#include <string>
#include <vector>

#include "base/seed_corpus.h"
#include "model/model_fuzz_format.h"

int main(int argc, char** argv) {
  using namespace kvengine::model_fuzz;  // NOLINT: a tool's main.
  const std::optional<std::filesystem::path> dir = kvengine::SeedCorpusDir(argc, argv);
  if (!dir) return 2;
  std::vector<Input> seeds;
  for (size_t p = 0; p < kNumPresets; ++p) seeds.push_back({p, {}});
  seeds.push_back({0, {{Op::kSetI32, 3, 7}, {Op::kRemoveTensor, 5, 0}}});
  seeds.push_back({2, {{Op::kSetU64, 9, 1 << 20}, {Op::kSetDim, 2, (64 << 2) | 1}}});
  seeds.push_back({3, {{Op::kRemoveKey, 4, 0}, {Op::kSetType, 7, 8}}});
  seeds.push_back({4, {{Op::kSetString, 6, 0}, {Op::kSetI32, 11, -1}}});
  std::vector<std::string> bytes;
  for (const Input& seed : seeds) bytes.push_back(Encode(seed));
  return kvengine::WriteSeedCorpus(*dir, bytes);
}
