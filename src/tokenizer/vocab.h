// Vocab: the token table of a SentencePiece-style ("llama") tokenizer, read from GGUF metadata
// and validated as hostile input.
//
// Keys read (llama.cpp's names; optional ones have llama.cpp's defaults for the llama family):
//   tokenizer.ggml.model           string, must be "llama"
//   tokenizer.ggml.tokens          string array [n], 1 <= n <= kMaxVocabSize, each at most
//                                  kMaxTokenBytes bytes
//   tokenizer.ggml.scores          f32 array [n], optional (default 0), never NaN
//   tokenizer.ggml.token_type      int array [n], optional (default normal), values 0..6
//   tokenizer.ggml.{bos,eos,unknown,eot,eom,padding,seperator}_token_id
//                                  optional ids in [0, n); 4294967295 or -1 means none.
//                                  Defaults: bos 1, eos 2, unknown 0 (when inside the vocab).
//   tokenizer.ggml.add_bos_token   bool, optional, default true
//   tokenizer.ggml.add_eos_token   bool, optional, default false
//   tokenizer.ggml.add_space_prefix bool, optional, default true
// Every error names the key it is about.
//
// Ownership and threads: a plain immutable value after LoadVocab; owned by Tokenizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_reader.h"

namespace kvengine {

// Values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,    // Treated like kNormal.
  kNormal = 1,       // Text with U+2581 for spaces.
  kUnknown = 2,      // <unk>: produced for bytes without a byte token; decodes to nothing.
  kControl = 3,      // <s>, </s>: never produced from text unless parse_special; decode to nothing.
  kUserDefined = 4,  // Matched in text before SentencePiece runs; decodes to its text verbatim.
  kUnused = 5,       // Never produced from text by the special-token pass; decodes to nothing.
  kByte = 6,         // "<0xXX>": one raw byte.
};

inline constexpr int32_t kNoToken = -1;
inline constexpr int32_t kMaxVocabSize = 1 << 22;     // 4M; real vocabularies are <= 262144.
inline constexpr size_t kMaxTokenBytes = 1024;        // Real tokens are well under 100 bytes.
inline constexpr uint32_t kNoTokenU32 = 0xFFFFFFFFu;  // How GGUF files write "no such token".

struct SpecialTokenIds {
  int32_t bos = kNoToken;
  int32_t eos = kNoToken;
  int32_t unk = kNoToken;
  int32_t eot = kNoToken;  // End of turn (chat models).
  int32_t eom = kNoToken;  // End of message (tool calls).
  int32_t pad = kNoToken;
  int32_t sep = kNoToken;
};

struct Vocab {
  // Per token id, all of size n = size().
  std::vector<std::string> text;  // As stored: "▁the", "<0x0A>", "<s>".
  std::vector<float> score;       // Merge priority; higher merges first. Never NaN.
  std::vector<TokenType> type;
  std::vector<int16_t> byte_value;  // 0..255 for kByte tokens, -1 for every other token.

  SpecialTokenIds special;  // Each kNoToken or a valid id.
  bool add_bos = true;      // Encode(add_special) prepends special.bos (which then exists).
  bool add_eos = false;     // Encode(add_special) appends special.eos (which then exists).
  bool add_space_prefix = true;

  // The token that byte-fallback emits for each byte: the kByte token "<0xXX>", else a token
  // whose text is that single byte, else special.unk. Every entry is a valid id.
  std::array<int32_t, 256> byte_to_token{};
  // Ids sorted by (text, id descending): Find() binary-searches it. An ordered index rather
  // than a hash map, so a hostile vocabulary cannot make lookups quadratic.
  std::vector<int32_t> sorted_ids;
  // Control, user-defined and unknown tokens with non-empty text, longest text first (ties:
  // lower id first): the order in which the special-token pass splits text.
  std::vector<int32_t> special_ids_by_length;
  size_t max_token_bytes = 0;  // Longest text; longer strings are never tokens.

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  bool IsValid(int32_t id) const { return id >= 0 && id < size(); }
  // The id whose text is `s`, or kNoToken. When several tokens share a text, the highest id
  // wins (llama.cpp's token_to_id map keeps the last one inserted).
  int32_t Find(std::string_view s) const;
};

// Reads and validates the vocabulary of `file` (see the key list above).
Result<Vocab> LoadVocab(const GgufFile& file);

}  // namespace kvengine
