#include "tier/tier_key.h"

#include "tier/block_record.h"

namespace kvengine {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // Upper case is refused: Name() never writes it, so a name has one spelling.
}

// Reads `tag` followed by a decimal number (no leading zeros, at most 9 digits) and a '-' from
// the front of *name, consuming them.
std::optional<uint32_t> TakeNumber(std::string_view* name, char tag) {
  constexpr size_t kMaxDigits = 9;  // 999999999 < INT32_MAX: no overflow below.
  if (name->empty() || (*name)[0] != tag) return std::nullopt;
  const size_t dash = name->find('-', 1);
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name->substr(1, dash - 1);
  if (digits.empty() || digits.size() > kMaxDigits) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  uint32_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + uint32_t(c - '0');
  }
  name->remove_prefix(dash + 1);
  return v;
}

}  // namespace

std::string TierKey::Name() const {
  return "g" + std::to_string(group) + "-v" + std::to_string(kRecordVersion) + "-f" +
         std::to_string(format) + "-" + hash.Hex();
}

std::optional<TierKey> ParseTierKeyName(std::string_view name) {
  constexpr size_t kHexChars = 2 * sizeof(Digest256);
  const std::optional<uint32_t> group = TakeNumber(&name, 'g');
  const std::optional<uint32_t> version = group ? TakeNumber(&name, 'v') : std::nullopt;
  const std::optional<uint32_t> format = version ? TakeNumber(&name, 'f') : std::nullopt;
  if (!format || *version != kRecordVersion) return std::nullopt;
  TierKey key;
  key.group = int32_t(*group);
  key.format = *format;
  if (name.size() != kHexChars) return std::nullopt;
  for (size_t i = 0; i < sizeof(Digest256); ++i) {
    int hi = HexDigit(name[2 * i]);
    int lo = HexDigit(name[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key.hash.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return key;
}

}  // namespace kvengine
