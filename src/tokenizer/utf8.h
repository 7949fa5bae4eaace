// UTF-8 validation and repair, shared by the tokenizer's stream decoder and (later) the HTTP
// server, which must never put invalid UTF-8 into a JSON string.
//
// "Valid" is RFC 3629: shortest form only, no surrogates (U+D800..U+DFFF), nothing above
// U+10FFFF. Invalid input is repaired the way the Unicode standard recommends ("maximal
// subpart" substitution, also what browsers and Python do): each maximal prefix of a
// well-formed sequence that cannot be completed becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kvengine {

// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

enum class Utf8Scan {
  kValid,      // `length` bytes form one well-formed character.
  kInvalid,    // The first `length` bytes (>= 1) are a maximal subpart: replace them by U+FFFD.
  kTruncated,  // The input ends inside a well-formed prefix of `length` bytes (1..3): more
               // bytes may still complete it.
};

struct Utf8ScanResult {
  Utf8Scan scan;
  size_t length;  // >= 1; pos + length <= s.size().
};

// Classifies the character that starts at `s[pos]`; requires pos < s.size().
Utf8ScanResult ScanUtf8(std::string_view s, size_t pos);

// True when every byte of `s` belongs to a well-formed character (the empty string is valid).
bool IsValidUtf8(std::string_view s);

// `s` with every maximal invalid subpart, a truncated tail included, replaced by U+FFFD.
// Returns `s` unchanged when it is valid.
std::string SanitizeUtf8(std::string_view s);

// Number of bytes of a character whose first byte is `lead`, as SentencePiece and llama.cpp
// split text: 1 for ASCII and for stray continuation bytes, 2/3/4 by the lead byte's high bits.
// (It does not validate; the tokenizer maps whatever the split yields to tokens or bytes.)
size_t Utf8LengthFromLead(unsigned char lead);

}  // namespace kvengine
