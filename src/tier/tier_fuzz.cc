// libFuzzer target: arbitrary bytes through CheckRecord / CheckRecordIntegrity, the reader of
// every value the disk and Redis tiers hand back. Whatever the bytes, the check must return
// without reading outside them; an accepted record must view its payload inside the input,
// agree with the expected meta exactly when CheckRecord says kOk, and re-encode to the same
// bytes. Any violation traps, which libFuzzer reports as a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "tier/block_record.h"
#include "tier/tier_fuzz_meta.h"

namespace kvengine {
namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Keeps a read that nothing uses, so that ASan checks it instead of the optimizer dropping it.
void KeepRead(int value) { asm volatile("" : : "r"(value) : "memory"); }

}  // namespace
}  // namespace kvengine

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvengine;  // NOLINT: fuzzer entry point.
  const std::span<const uint8_t> input(data, size);
  RecordMeta meta;
  std::span<const uint8_t> payload;
  const RecordCheck integrity = CheckRecordIntegrity(input, &meta, &payload);
  const RecordMeta expected =
      tier_fuzz::ExpectedMeta(size >= kRecordHeaderBytes ? size - kRecordHeaderBytes : 0);
  std::span<const uint8_t> checked;
  const RecordCheck check = CheckRecord(input, expected, &checked);
  if (integrity != RecordCheck::kOk) {
    Require(check == integrity);
    Require(checked.empty());
    return 0;
  }
  Require(payload.data() == data + kRecordHeaderBytes);
  Require(payload.size() == meta.payload_bytes && payload.size() + kRecordHeaderBytes == size);
  if (!payload.empty()) KeepRead(payload.front() ^ payload.back());
  Require(check == (meta == expected ? RecordCheck::kOk : RecordCheck::kForeign));
  Require(check != RecordCheck::kOk || checked.data() == payload.data());
  const std::vector<uint8_t> again = EncodeRecord(meta, payload);
  Require(std::equal(again.begin(), again.end(), input.begin(), input.end()));
  return 0;
}
