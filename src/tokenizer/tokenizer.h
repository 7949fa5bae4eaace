// Tokenizer: text <-> token ids for the two vocabulary kinds of GGUF files, matching llama.cpp's
// llama_tokenize id for id: SentencePiece ("llama", spm.h) and byte-level BPE ("gpt2", bpe.h;
// GPT-2, Llama-3, Qwen2/3, selected by tokenizer.ggml.pre).
//
// Encode(text, add_special, parse_special):
//   1. BOS first when add_special and the model's add_bos_token say so (vocab.h has the
//      defaults: true for llama, true for gpt2 with the Llama-3 pre-tokenizer, else false).
//   2. Special-token pass: user-defined tokens are always cut out of the text as whole tokens;
//      control and unknown tokens ("<s>", "<|begin_of_text|>", "<|im_end|>") only when
//      parse_special is true — otherwise they are ordinary text. Longer token texts are cut
//      first (llama.cpp's order).
//   3. Each remaining text fragment, separately:
//      llama: "▁" prepended when add_space_prefix and the fragment starts the text or follows
//        a special token; every ' ' escaped to "▁" (U+2581); then the SentencePiece merge with
//        byte fallback (spm.h).
//      gpt2: pre-tokenized, written in the byte alphabet and merged by rank (bpe.h); no space
//        prefix. Invalid UTF-8 bytes encode as U+FFFD (llama.cpp's rule).
//   4. EOS last when add_special and the model's add_eos_token (default false) say so.
// Encode(segments, add_special): the segments' texts joined and encoded as one text, except
//   that control and unknown tokens are recognized only where they lie wholly inside a segment
//   with parse_special (a chat template's markup), never in one without (a message's content).
//   Step 3 works on the joined text, so for segments whose unparsed texts hold no special-token
//   text the ids equal Encode(joined, add_special, /*parse_special=*/true).
// Decode(ids): concatenates the pieces of the ids: normal tokens with "▁" turned back into
//   spaces (llama) or mapped from the byte alphabet back to bytes (gpt2), byte tokens as their
//   raw byte, user-defined tokens verbatim; control, unknown and unused tokens and ids outside
//   the vocabulary render as nothing. When ids[0] is BOS and the model adds a space prefix
//   (llama only), one leading space of ids[1]'s piece is dropped (it is the prefix Encode
//   added), so Decode(Encode(text, true)) == text for text without special tokens (and, for
//   gpt2, valid UTF-8).
//   Without a leading BOS nothing is stripped: decoding generated ids alone keeps the leading
//   space of " was" as a continuation needs (the golden output_text does the same). llama.cpp's
//   llama_detokenize differs here: it strips the first token's space only when there is *no*
//   leading BOS. Decode returns raw bytes; they may be invalid UTF-8 (a cut-off byte sequence, a
//   hostile vocabulary): use StreamDecoder or SanitizeUtf8 before showing them to a client.
//
// Ownership and threads: immutable after FromGguf; any thread may call the const methods
// concurrently. It keeps no reference to the GgufFile.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/vocab.h"

namespace kvengine {

// A piece of the text for Encode(segments, ...); `text` must outlive the call.
struct EncodeSegment {
  std::string_view text;
  bool parse_special = false;  // Whether control tokens may be recognized inside it.
};

class Tokenizer {
 public:
  // Reads and validates the tokenizer.ggml.* metadata (vocab.h lists the keys).
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);
  // `vocab` must come from LoadVocab (its invariants are relied on).
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

  // Text to ids (see above). add_special: add BOS/EOS as the model's metadata says.
  std::vector<int32_t> Encode(std::string_view text, bool add_special,
                              bool parse_special = false) const;
  // The segments' texts as one text, special tokens only inside parse_special ones (see above).
  std::vector<int32_t> Encode(std::span<const EncodeSegment> segments, bool add_special) const;
  // Ids to text (see above).
  std::string Decode(std::span<const int32_t> ids) const;
  // The token's text as stored in the vocabulary ("▁the", "<0x0A>", "<s>"); empty for an id
  // outside the vocabulary.
  std::string_view Piece(int32_t id) const;

  int32_t vocab_size() const { return vocab_.size(); }
  int32_t bos() const { return vocab_.special.bos; }  // kNoToken (-1) when the model has none.
  int32_t eos() const { return vocab_.special.eos; }  // kNoToken (-1) when the model has none.
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  // True for EOS, EOT and EOM (whichever the model has): generation stops there.
  bool IsEndOfGeneration(int32_t id) const;
  const Vocab& vocab() const { return vocab_; }

 private:
  friend class StreamDecoder;

  // Appends the piece of `id` (Decode's rules) to `out`, without one leading space when
  // `strip_leading_space`.
  void AppendPiece(int32_t id, bool strip_leading_space, std::string* out) const;
  // Whether the piece of the token at `index` loses its leading space, given ids[0] (Decode's
  // rule for a leading BOS).
  bool StripsLeadingSpace(size_t index, int32_t first_id) const {
    return index == 1 && first_id == vocab_.special.bos && first_id != kNoToken &&
           vocab_.add_space_prefix;
  }

  Vocab vocab_;
};

}  // namespace kvengine
