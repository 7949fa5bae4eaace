#include "tokenizer/utf8.h"

#include <cstdint>

#include "base/check.h"

namespace kvengine {
namespace {

// The allowed range of the second byte for each lead byte (RFC 3629 table 3-7); the third and
// fourth bytes are always 0x80..0xBF.
struct LeadInfo {
  size_t length;  // 0 = not a lead byte.
  uint8_t second_min;
  uint8_t second_max;
};

LeadInfo InfoForLead(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};  // Continuation byte or overlong 2-byte lead (C0, C1).
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};  // No overlong 3-byte forms.
  if (b == 0xED) return {3, 0x80, 0x9F};  // No surrogates.
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};  // No overlong 4-byte forms.
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // Nothing above U+10FFFF.
  return {0, 0, 0};                       // F5..FF never appear.
}

}  // namespace

Utf8ScanResult ScanUtf8(std::string_view s, size_t pos) {
  KV_CHECK(pos < s.size()) << "ScanUtf8 at " << pos << " of " << s.size();
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const LeadInfo info = InfoForLead(byte_at(pos));
  if (info.length == 0) return {Utf8Scan::kInvalid, 1};
  if (info.length == 1) return {Utf8Scan::kValid, 1};
  // Invariant of the loop: bytes pos .. pos+i-1 are a well-formed prefix.
  for (size_t i = 1; i < info.length; ++i) {
    if (pos + i >= s.size()) return {Utf8Scan::kTruncated, i};
    const uint8_t b = byte_at(pos + i);
    const uint8_t lo = i == 1 ? info.second_min : 0x80;
    const uint8_t hi = i == 1 ? info.second_max : 0xBF;
    if (b < lo || b > hi) return {Utf8Scan::kInvalid, i};
  }
  return {Utf8Scan::kValid, info.length};
}

bool IsValidUtf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8ScanResult r = ScanUtf8(s, pos);
    if (r.scan != Utf8Scan::kValid) return false;
    pos += r.length;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8ScanResult r = ScanUtf8(s, pos);
    switch (r.scan) {
      case Utf8Scan::kValid:
        out.append(s.substr(pos, r.length));
        break;
      case Utf8Scan::kInvalid:
      case Utf8Scan::kTruncated:
        out.append(kUtf8Replacement);
        break;
    }
    pos += r.length;
  }
  return out;
}

size_t Utf8LengthFromLead(unsigned char lead) {
  // Indexed by the high nibble: 0x0-0x7 ASCII, 0x8-0xB continuation, 0xC-0xD two bytes,
  // 0xE three, 0xF four.
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

}  // namespace kvengine
