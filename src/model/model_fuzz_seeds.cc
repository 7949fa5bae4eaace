// model_fuzz_seeds DIR: writes the seed corpus of model_fuzz (model_fuzz_format.h) into DIR:
// every preset unedited, and a few edits of each kind.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/model_fuzz_format.h"

int main(int argc, char** argv) {
  using namespace kvengine::model_fuzz;  // NOLINT: a tool's main.
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<Input> seeds;
  for (size_t p = 0; p < kNumPresets; ++p) seeds.push_back({p, {}});
  seeds.push_back({0, {{Op::kSetI32, 3, 7}, {Op::kRemoveTensor, 5, 0}}});
  seeds.push_back({2, {{Op::kSetU64, 9, 1 << 20}, {Op::kSetDim, 2, (64 << 2) | 1}}});
  seeds.push_back({3, {{Op::kRemoveKey, 4, 0}, {Op::kSetType, 7, 8}}});
  seeds.push_back({4, {{Op::kSetString, 6, 0}, {Op::kSetI32, 11, -1}}});
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::filesystem::path path = dir / ("seed_" + std::to_string(i));
    std::ofstream out(path, std::ios::binary);
    out << Encode(seeds[i]);
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("wrote %zu seeds to %s\n", seeds.size(), argv[1]);
  return 0;
}
