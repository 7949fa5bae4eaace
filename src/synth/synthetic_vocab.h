// A synthetic SentencePiece-style ("llama") vocabulary for synthetic models, so that encoding
// ordinary text works and any text round-trips through byte fallback.
//
// Layout of the n_vocab entries (ids):
//   0           "<unk>"                 type 2 (unknown)  score 0
//   1           "<s>"   (BOS)           type 3 (control)  score 0
//   2           "</s>"  (EOS)           type 3 (control)  score 0
//   3 .. 258    "<0x00>" .. "<0xFF>"    type 6 (byte)     score 0
//   259 ..      text pieces             type 1 (normal)   score -(id - 259): decreasing
// Pieces, in order until the vocabulary is full: "▁" (U+2581, SentencePiece's space), single
// letters, digits and punctuation with and without a leading "▁", common English words with a
// leading "▁" and common word endings, then every lowercase letter string of length 2, 3, ...
// in lexicographic order, each as "▁" + s and s. Every piece longer than one character is added
// after its prefix without the last character, so a merge-based tokenizer can reach each piece
// from single characters. All pieces are unique, valid UTF-8 strings.
//
// Pure function; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvengine {

// Token types as llama.cpp numbers them (LLAMA_TOKEN_TYPE_*).
inline constexpr int32_t kTokenTypeNormal = 1;
inline constexpr int32_t kTokenTypeUnknown = 2;
inline constexpr int32_t kTokenTypeControl = 3;
inline constexpr int32_t kTokenTypeByte = 6;

inline constexpr uint32_t kSynthUnkId = 0;
inline constexpr uint32_t kSynthBosId = 1;
inline constexpr uint32_t kSynthEosId = 2;
inline constexpr uint32_t kSynthFirstByteId = 3;     // "<0x00>"; byte b is id 3 + b.
inline constexpr uint32_t kSynthFirstPieceId = 259;  // The first text piece, "▁".

struct SyntheticVocab {
  std::vector<std::string> tokens;  // [n_vocab] UTF-8, unique.
  std::vector<float> scores;        // [n_vocab]
  std::vector<int32_t> types;       // [n_vocab] kTokenType*.
};

// n_vocab >= kSynthFirstPieceId + 1 (checked).
SyntheticVocab MakeSyntheticVocab(int n_vocab);

}  // namespace kvengine
