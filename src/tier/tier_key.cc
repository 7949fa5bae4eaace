#include "tier/tier_key.h"

namespace kvengine {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // Upper case is refused: Name() never writes it, so a name has one spelling.
}

}  // namespace

std::optional<TierKey> ParseTierKeyName(std::string_view name) {
  constexpr size_t kHexChars = 2 * sizeof(Digest256);
  constexpr size_t kMaxGroupDigits = 9;  // 999999999 < INT32_MAX: no overflow below.
  if (name.size() < 2 || name[0] != 'g') return std::nullopt;
  size_t dash = name.find('-', 1);
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view digits = name.substr(1, dash - 1);
  if (digits.empty() || digits.size() > kMaxGroupDigits) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  TierKey key;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    key.group = key.group * 10 + (c - '0');
  }
  std::string_view hex = name.substr(dash + 1);
  if (hex.size() != kHexChars) return std::nullopt;
  for (size_t i = 0; i < sizeof(Digest256); ++i) {
    int hi = HexDigit(hex[2 * i]);
    int lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    key.hash.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return key;
}

}  // namespace kvengine
