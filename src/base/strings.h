// Small string helpers shared by the parsers of flags, names and file metadata.
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

}  // namespace kvengine
