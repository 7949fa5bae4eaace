// The shared part of the fuzzers' seed writers (`NAME_fuzz_seeds DIR`, scripts/test.sh and each
// folder's run_fuzz.sh call them): the DIR argument and writing one file per seed.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace kvengine {

// DIR of `argv[0] DIR`, created if missing. nullopt after printing the usage or the error.
inline std::optional<std::filesystem::path> SeedCorpusDir(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return std::nullopt;
  }
  const std::filesystem::path dir(argv[1]);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return std::nullopt;
  }
  return dir;
}

// Writes each (name, bytes) to dir/name. Returns the tool's exit status: 1 after printing the first
// file that could not be written, else 0 after printing how many were.
inline int WriteSeedCorpus(const std::filesystem::path& dir,
                           const std::vector<std::pair<std::string, std::string>>& seeds) {
  for (const auto& [name, bytes] : seeds) {
    const std::filesystem::path path = dir / name;
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
  return 0;
}

// Unnamed seeds: seeds[i] goes to dir/seed_i.
inline int WriteSeedCorpus(const std::filesystem::path& dir,
                           const std::vector<std::string>& seeds) {
  std::vector<std::pair<std::string, std::string>> named;
  for (size_t i = 0; i < seeds.size(); ++i)
    named.emplace_back("seed_" + std::to_string(i), seeds[i]);
  return WriteSeedCorpus(dir, named);
}

}  // namespace kvengine
