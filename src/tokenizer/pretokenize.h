// Pre-tokenizers of byte-level BPE vocabularies: they split text into the words that BPE then
// merges within (no merge crosses a word boundary). Each is the HF tokenizers `Split` regex of
// its model family, matched left to right as a regex engine does (leftmost alternative that
// matches at the current position, greedy quantifiers with backtracking), written by hand over
// code points because std::regex has no Unicode classes. Classes come from ICU: \p{L} is
// general category L*, \p{N} is N*, \s is the Unicode White_Space property (as in Rust's regex
// crate and llama.cpp; JavaScript's \s differs only at U+0085, which it lacks, and U+FEFF,
// which it has).
//
//   kGpt2   (GPT-2, "gpt2" / "default"):
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kLlama3 (Llama-3, "llama3" / "llama-v3" / "llama-bpe"):
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//     ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   kQwen2  (Qwen2/2.5/3, "qwen2" / "deepseek-r1-qwen"): kLlama3 with \p{N} (single digits)
//     in place of \p{N}{1,3}.
// The contractions match ASCII letters only (as llama.cpp and the JavaScript port do; Rust's
// (?i) would also let "'ſ" (U+017F) match 's).
// Every code point is a letter, a number, whitespace or "other", and each class is matched by
// some alternative, so the words cover the text without gaps.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kvengine/status.h"

namespace kvengine {

enum class PreTokenizer : uint8_t {
  kGpt2,
  kLlama3,
  kQwen2,
};

// The pre-tokenizer that `tokenizer.ggml.pre` names (the names llama.cpp uses, listed above).
// An unknown name is an error that names it and lists the supported ones.
Result<PreTokenizer> ParsePreTokenizer(std::string_view name);
std::string_view PreTokenizerName(PreTokenizer p);

// Splits `text`, which must be valid UTF-8 (callers replace invalid bytes first), into words.
// The words are consecutive, non-empty views into `text` that together cover all of it.
std::vector<std::string_view> PreTokenize(PreTokenizer p, std::string_view text);

}  // namespace kvengine
