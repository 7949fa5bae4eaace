// tier_fuzz_seeds DIR: writes a handful of valid records into DIR, the seed corpus of tier_fuzz:
// the fuzzer's expected block at several payload sizes (empty, odd, page-sized), and records that
// differ from it in one identity field each (foreign).
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/seed_corpus.h"
#include "tier/block_record.h"
#include "tier/tier_fuzz_meta.h"

namespace kvengine {
namespace {

std::vector<uint8_t> Pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 13 + seed);
  return out;
}

// The (name, bytes) seed of a record with `meta` and a patterned payload.
std::pair<std::string, std::string> Seed(const std::string& name, const RecordMeta& meta) {
  const std::vector<uint8_t> rec =
      EncodeRecord(meta, Pattern(meta.payload_bytes, uint8_t(name.size())));
  return {name, std::string(rec.begin(), rec.end())};
}

}  // namespace
}  // namespace kvengine

int main(int argc, char** argv) {
  using namespace kvengine;  // NOLINT: small tool.
  const std::optional<std::filesystem::path> dir = SeedCorpusDir(argc, argv);
  if (!dir) return 2;
  std::vector<std::pair<std::string, std::string>> seeds;
  for (uint64_t n : {0, 1, 37, 4096}) {
    seeds.push_back(Seed("ok-" + std::to_string(n), tier_fuzz::ExpectedMeta(n)));
  }
  RecordMeta m = tier_fuzz::ExpectedMeta(64);
  m.group = 2;
  seeds.push_back(Seed("foreign-group", m));
  m = tier_fuzz::ExpectedMeta(64);
  m.payload_format = 1;
  seeds.push_back(Seed("foreign-format", m));
  m = tier_fuzz::ExpectedMeta(64);
  m.namespace_digest[0] ^= 1;
  seeds.push_back(Seed("foreign-namespace", m));
  return WriteSeedCorpus(*dir, seeds);
}
