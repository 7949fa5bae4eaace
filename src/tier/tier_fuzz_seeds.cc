// tier_fuzz_seeds DIR: writes a handful of valid records into DIR, the seed corpus of tier_fuzz:
// the fuzzer's expected block at several payload sizes (empty, odd, page-sized), and records that
// differ from it in one identity field each (foreign).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tier/block_record.h"
#include "tier/tier_fuzz_meta.h"

namespace kvengine {
namespace {

std::vector<uint8_t> Pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 13 + seed);
  return out;
}

bool Write(const std::filesystem::path& dir, const std::string& name, const RecordMeta& meta) {
  std::vector<uint8_t> rec = EncodeRecord(meta, Pattern(meta.payload_bytes, uint8_t(name.size())));
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(rec.data()), std::streamsize(rec.size()));
  return bool(out);
}

}  // namespace
}  // namespace kvengine

int main(int argc, char** argv) {
  using namespace kvengine;  // NOLINT: small tool.
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  bool ok = true;
  for (uint64_t n : {0, 1, 37, 4096}) {
    ok &= Write(dir, "ok-" + std::to_string(n), tier_fuzz::ExpectedMeta(n));
  }
  RecordMeta m = tier_fuzz::ExpectedMeta(64);
  m.group = 2;
  ok &= Write(dir, "foreign-group", m);
  m = tier_fuzz::ExpectedMeta(64);
  m.payload_format = 1;
  ok &= Write(dir, "foreign-format", m);
  m = tier_fuzz::ExpectedMeta(64);
  m.namespace_digest[0] ^= 1;
  ok &= Write(dir, "foreign-namespace", m);
  if (!ok) {
    std::fprintf(stderr, "tier_fuzz_seeds: cannot write to %s\n", argv[1]);
    return 1;
  }
  return 0;
}
