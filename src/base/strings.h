// Small string helpers shared by the parsers of flags, names and file metadata, and by tests of
// generated text (charts, reports).
#pragma once

#include <string_view>

namespace kvengine {

// ASCII case-insensitive equality ("GiB" == "gib"); bytes >= 0x80 compare exactly.
constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Occurrences of `needle` (non-empty) in `s`, overlapping ones included.
constexpr size_t CountOccurrences(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string_view::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}
static_assert(CountOccurrences("<a><b></b>", "<") == 3);
static_assert(CountOccurrences("aaa", "aa") == 2);
static_assert(CountOccurrences("", "x") == 0);

}  // namespace kvengine
