// GPT-2's byte-level alphabet: the reversible map from the 256 byte values to 256 printable
// Unicode characters that byte-level BPE vocabularies (GPT-2, Llama-3, Qwen) are written in.
//
// The map (GPT-2's bytes_to_unicode): the bytes '!'..'~' (0x21..0x7E), 0xA1..0xAC and
// 0xAE..0xFF stand for the code point of the same value; the remaining 68 bytes (0x00..0x20,
// 0x7F..0xA0, 0xAD) stand for U+0100..U+0143 in increasing byte order, so ' ' (0x20) is U+0120
// "Ġ" and '\n' (0x0A) is U+010A "Ċ". Every mapped character is 1 or 2 UTF-8 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvengine {

// The code point that stands for `byte`.
uint32_t ByteLevelCodePoint(uint8_t byte);

// Appends the byte-level form of `bytes` (each byte's character, UTF-8 encoded) to `out`.
void AppendByteLevel(std::string_view bytes, std::string* out);

// Appends the bytes that the byte-level text `text` stands for. Characters outside the
// alphabet (a hostile or foreign vocabulary entry) and bytes that are not valid UTF-8 are
// copied through unchanged, so nothing is lost and nothing fails.
void AppendFromByteLevel(std::string_view text, std::string* out);

}  // namespace kvengine
