#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

// Code points U+0000..U+0143 cover the whole alphabet.
constexpr uint32_t kAlphabetEnd = 0x144;

constexpr bool StandsForItself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint16_t, 256> byte_to_cp;          // Byte -> code point (< kAlphabetEnd).
  std::array<int16_t, kAlphabetEnd> cp_to_byte;  // Code point -> byte, -1 outside the alphabet.
};

constexpr Tables MakeTables() {
  Tables t{};
  for (int16_t& b : t.cp_to_byte) b = -1;
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const uint32_t cp = StandsForItself(b) ? b : next++;
    t.byte_to_cp[b] = static_cast<uint16_t>(cp);
    t.cp_to_byte[cp] = static_cast<int16_t>(b);
  }
  return t;
}

constexpr Tables kTables = MakeTables();
static_assert(kTables.byte_to_cp[' '] == 0x120 && kTables.byte_to_cp['\n'] == 0x10A);
static_assert(kTables.byte_to_cp[0xAD] == 0x143);

}  // namespace

uint32_t ByteLevelCodePoint(uint8_t byte) { return kTables.byte_to_cp[byte]; }

void AppendByteLevel(std::string_view bytes, std::string* out) {
  for (char c : bytes) {
    const uint32_t cp = kTables.byte_to_cp[static_cast<uint8_t>(c)];
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else {  // < 0x800: two bytes.
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
}

void AppendFromByteLevel(std::string_view text, std::string* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8ScanResult r = ScanUtf8(text, pos);
    if (r.scan == Utf8Scan::kValid && r.length <= 2) {
      const auto b0 = static_cast<uint8_t>(text[pos]);
      const uint32_t cp =
          r.length == 1 ? b0 : ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[pos + 1]) & 0x3Fu);
      if (cp < kAlphabetEnd && kTables.cp_to_byte[cp] >= 0) {
        out->push_back(static_cast<char>(kTables.cp_to_byte[cp]));
        pos += r.length;
        continue;
      }
    }
    out->append(text.substr(pos, r.length));
    pos += r.length;
  }
}

}  // namespace kvengine
