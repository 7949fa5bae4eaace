// Vocab: the token table of a SentencePiece-style ("llama") or byte-level BPE ("gpt2")
// tokenizer, read from GGUF metadata and validated as hostile input.
//
// Keys read (llama.cpp's names; optional ones have llama.cpp's defaults, per model where noted):
//   tokenizer.ggml.model           string, "llama" (SentencePiece) or "gpt2" (byte-level BPE);
//                                  anything else is an error naming it
//   tokenizer.ggml.tokens          string array [n], 1 <= n <= kMaxVocabSize, each at most
//                                  kMaxTokenBytes bytes
//   tokenizer.ggml.scores          f32 array [n], optional (default 0), never NaN
//   tokenizer.ggml.token_type      int array [n], optional (default normal), values 0..6
//   tokenizer.ggml.{bos,eos,unknown,eot,eom,padding,seperator}_token_id
//                                  optional ids in [0, n); 4294967295 or -1 means none.
//                                  Defaults for llama: bos 1, eos 2, unknown 0 (when inside
//                                  the vocab); for gpt2: none.
//   tokenizer.ggml.add_bos_token   bool, optional; default true for llama, for gpt2 true only
//                                  with the Llama-3 pre-tokenizer and a BOS token (llama.cpp)
//   tokenizer.ggml.add_eos_token   bool, optional, default false
//   tokenizer.ggml.add_space_prefix bool, optional, default true; llama only (gpt2: false)
//   tokenizer.ggml.pre             string, gpt2 only, optional (default "default"): the
//                                  pre-tokenizer (pretokenize.h); unknown names are an error
//   tokenizer.ggml.merges          string array, gpt2 only, required (bpe.h)
// Every error names the key it is about.
//
// Ownership and threads: a plain immutable value after LoadVocab; owned by Tokenizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/pretokenize.h"

namespace kvengine {

// Values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,    // Treated like kNormal.
  kNormal = 1,       // llama: text with U+2581 for spaces; gpt2: text in the byte alphabet.
  kUnknown = 2,      // <unk>: produced for bytes without a byte token; decodes to nothing.
  kControl = 3,      // <s>, </s>: never produced from text unless parse_special; decode to nothing.
  kUserDefined = 4,  // Matched in text before SentencePiece runs; decodes to its text verbatim.
  kUnused = 5,       // Never produced from text by the special-token pass; decodes to nothing.
  kByte = 6,         // "<0xXX>": one raw byte.
};

// tokenizer.ggml.model.
enum class TokenizerModel : uint8_t {
  kSpm,  // "llama": SentencePiece merges by score with byte fallback (spm.h).
  kBpe,  // "gpt2": byte-level BPE merges by rank (bpe.h).
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

// One BPE merge: the tokens `left` and `right`, adjacent, become the token `result`.
struct BpeMerge {
  uint64_t pair;   // left << 32 | right (both valid ids): the sort key.
  int32_t rank;    // Lower merges first: the index in tokenizer.ggml.merges.
  int32_t result;  // The token whose text is text[left] + text[right].
};

struct Vocab {
  TokenizerModel model = TokenizerModel::kSpm;

  // Per token id, all of size n = size().
  std::vector<std::string> text;  // As stored: "▁the", "<0x0A>", "<s>".
  std::vector<float> score;       // Merge priority; higher merges first. Never NaN.
  std::vector<TokenType> type;
  std::vector<int16_t> byte_value;  // 0..255 for kByte tokens, -1 for every other token.

  SpecialTokenIds special;  // Each kNoToken or a valid id.
  bool add_bos = true;      // Encode(add_special) prepends special.bos (which then exists).
  bool add_eos = false;     // Encode(add_special) appends special.eos (which then exists).
  bool add_space_prefix = true;

  // BPE only (model kBpe).
  PreTokenizer pre = PreTokenizer::kGpt2;
  bool ignore_merges = false;    // A whole word that is a token is emitted as is (Llama-3).
  std::vector<BpeMerge> merges;  // Sorted by pair, one entry per pair.

  // SPM only: the token that byte-fallback emits for each byte: the kByte token "<0xXX>", else
  // a token whose text is that single byte, else special.unk. Every entry is a valid id for
  // SPM vocabularies; all kNoToken for BPE ones (which never fall back to bytes).
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
  // The merge of the adjacent tokens (left, right), or nullptr. O(log merges).
  const BpeMerge* FindMerge(int32_t left, int32_t right) const;
};

// Reads and validates the vocabulary of `file` (see the key list above).
Result<Vocab> LoadVocab(const GgufFile& file);

}  // namespace kvengine
