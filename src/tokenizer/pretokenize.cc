#include "tokenizer/pretokenize.h"

#include <unicode/uchar.h>

#include <string>

#include <fmt/format.h>

#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

// The classes the regexes distinguish. kEnd stands for "past the end of the text", so that
// look-ahead needs no bounds checks.
enum class CpClass : uint8_t { kOther, kLetter, kNumber, kSpace, kEnd };

CpClass Classify(uint32_t cp) {
  if (cp < 0x80) {  // ASCII fast path; the same answers as ICU.
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CpClass::kLetter;
    if (cp >= '0' && cp <= '9') return CpClass::kNumber;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CpClass::kSpace;
    return CpClass::kOther;
  }
  const auto c = static_cast<UChar32>(cp);
  const uint32_t mask = U_GET_GC_MASK(c);
  if ((mask & U_GC_L_MASK) != 0) return CpClass::kLetter;
  if ((mask & U_GC_N_MASK) != 0) return CpClass::kNumber;
  if (u_hasBinaryProperty(c, UCHAR_WHITE_SPACE)) return CpClass::kSpace;
  return CpClass::kOther;
}

// One character of the text: its code point, class and length in bytes.
struct Char {
  uint32_t cp;   // 0 past the end (no alternative looks for U+0000 there).
  CpClass cls;   // kEnd past the end.
  uint8_t size;  // Bytes; 0 past the end.
};

// The text read character by character at byte positions, decoded on demand (no per-character
// buffers, so memory stays O(1) however long the text is). Each character is decoded at most
// a few times by the matchers below.
class Text {
 public:
  explicit Text(std::string_view text) : text_(text) {}

  size_t size() const { return text_.size(); }

  Char At(size_t pos) const {
    if (pos >= text_.size()) return {0, CpClass::kEnd, 0};
    const auto lead = static_cast<uint8_t>(text_[pos]);
    if (lead < 0x80) return {lead, Classify(lead), 1};
    const Utf8ScanResult r = ScanUtf8(text_, pos);
    // Invalid input is a caller error; it still must not crash: such a byte is "other".
    if (r.scan != Utf8Scan::kValid) return {0xFFFD, CpClass::kOther, 1};
    const auto b = [&](size_t i) {
      return static_cast<uint32_t>(static_cast<uint8_t>(text_[pos + i]));
    };
    uint32_t cp = 0;
    switch (r.length) {
      case 2:
        cp = ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        break;
      case 3:
        cp = ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        break;
      default:
        cp = ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
        break;
    }
    return {cp, Classify(cp), static_cast<uint8_t>(r.length)};
  }

  CpClass ClassAt(size_t pos) const { return At(pos).cls; }
  // The position after the character at pos (pos itself past the end).
  size_t Next(size_t pos) const { return pos + At(pos).size; }
  // The first position >= pos whose character's class is not `c`.
  size_t RunEnd(size_t pos, CpClass c) const {
    for (Char ch = At(pos); ch.cls == c; ch = At(pos)) pos += ch.size;
    return pos;
  }

 private:
  std::string_view text_;
};

bool IsCrLf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
uint32_t AsciiLower(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 0x20 : cp; }

// 's|'t|'re|'ve|'m|'ll|'d at pos (ASCII letters, either case when `ignore_case`): the end of
// the match, or pos when there is none. Every character involved is one byte.
size_t MatchContraction(const Text& t, size_t pos, bool ignore_case) {
  if (t.At(pos).cp != '\'') return pos;
  const auto letter = [&](size_t p) {
    const uint32_t cp = t.At(p).cp;
    return ignore_case ? AsciiLower(cp) : cp;
  };
  const uint32_t a = letter(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
  const uint32_t b = letter(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
  return pos;
}

// The whitespace alternatives at pos (a whitespace character): `with_newlines` adds
// \s*[\r\n]+ before \s+(?!\S)|\s+.
size_t MatchWhitespace(const Text& t, size_t pos, bool with_newlines) {
  size_t end = pos;
  size_t last_start = pos;                        // Start of the run's last character.
  size_t after_last_newline = std::string::npos;  // End of the run's last CR or LF.
  size_t count = 0;
  for (Char ch = t.At(end); ch.cls == CpClass::kSpace; ch = t.At(end)) {
    last_start = end;
    end += ch.size;
    ++count;
    if (IsCrLf(ch.cp)) after_last_newline = end;
  }
  // \s*[\r\n]+: \s* backtracks from the whole run to the last CR/LF in it, which [\r\n]+
  // then takes (the character after it is not CR/LF).
  if (with_newlines && after_last_newline != std::string::npos) return after_last_newline;
  // \s+(?!\S): at the end of the text the whole run; before a non-space, the run less its
  // last character (which then starts the next word, e.g. " word"), if that leaves any.
  if (t.ClassAt(end) == CpClass::kEnd) return end;
  if (count >= 2) return last_start;
  return end;  // \s+: a single whitespace character before a non-space.
}

// One word of the GPT-2 regex starting at pos < t.size(); returns its end.
size_t NextGpt2(const Text& t, size_t pos) {
  if (const size_t e = MatchContraction(t, pos, /*ignore_case=*/false); e > pos) return e;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+', in this order.
  const bool space = t.At(pos).cp == ' ';
  for (CpClass c : {CpClass::kLetter, CpClass::kNumber, CpClass::kOther}) {
    const size_t j = space && t.ClassAt(pos + 1) == c ? pos + 1 : pos;
    if (t.ClassAt(j) == c) return t.RunEnd(j, c);
  }
  return MatchWhitespace(t, pos, /*with_newlines=*/false);
}

// One word of the Llama-3 (max_digits 3) or Qwen2 (max_digits 1) regex starting at pos.
size_t NextLlama3(const Text& t, size_t pos, size_t max_digits) {
  if (const size_t e = MatchContraction(t, pos, /*ignore_case=*/true); e > pos) return e;
  const Char first = t.At(pos);
  // [^\r\n\p{L}\p{N}]?\p{L}+ : one leading non-letter, non-digit, non-CR/LF character (a
  // space, a tab, punctuation) joins the letters that follow it.
  size_t j = pos;
  if (first.cls != CpClass::kLetter && first.cls != CpClass::kNumber && !IsCrLf(first.cp) &&
      t.ClassAt(pos + first.size) == CpClass::kLetter) {
    j = pos + first.size;
  }
  if (t.ClassAt(j) == CpClass::kLetter) return t.RunEnd(j, CpClass::kLetter);
  // \p{N}{1,3} or \p{N}.
  if (first.cls == CpClass::kNumber) {
    j = pos + first.size;
    for (size_t digits = 1; digits < max_digits; ++digits) {
      const Char ch = t.At(j);
      if (ch.cls != CpClass::kNumber) break;
      j += ch.size;
    }
    return j;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  j = first.cp == ' ' && t.ClassAt(pos + 1) == CpClass::kOther ? pos + 1 : pos;
  if (t.ClassAt(j) == CpClass::kOther) {
    j = t.RunEnd(j, CpClass::kOther);
    while (IsCrLf(t.At(j).cp)) ++j;
    return j;
  }
  return MatchWhitespace(t, pos, /*with_newlines=*/true);
}

}  // namespace

Result<PreTokenizer> ParsePreTokenizer(std::string_view name) {
  if (name == "gpt2" || name == "default") return PreTokenizer::kGpt2;
  if (name == "llama3" || name == "llama-v3" || name == "llama-bpe") return PreTokenizer::kLlama3;
  if (name == "qwen2" || name == "deepseek-r1-qwen") return PreTokenizer::kQwen2;
  return InvalidArgument(fmt::format(
      "tokenizer.ggml.pre is \"{}\", an unsupported pre-tokenizer; supported: gpt2, default, "
      "llama3, llama-v3, llama-bpe, qwen2, deepseek-r1-qwen",
      name.substr(0, 64)));
}

std::string_view PreTokenizerName(PreTokenizer p) {
  switch (p) {
    case PreTokenizer::kGpt2:
      return "gpt2";
    case PreTokenizer::kLlama3:
      return "llama3";
    case PreTokenizer::kQwen2:
      return "qwen2";
  }
  return "?";
}

std::vector<std::string_view> PreTokenize(PreTokenizer p, std::string_view text) {
  const Text t(text);
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < t.size()) {
    size_t end = pos;
    switch (p) {
      case PreTokenizer::kGpt2:
        end = NextGpt2(t, pos);
        break;
      case PreTokenizer::kLlama3:
        end = NextLlama3(t, pos, 3);
        break;
      case PreTokenizer::kQwen2:
        end = NextLlama3(t, pos, 1);
        break;
    }
    if (end <= pos) end = t.Next(pos);  // Unreachable (every class is matched); keeps progress.
    words.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

}  // namespace kvengine
