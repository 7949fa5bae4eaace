// The SentencePiece BPE merge over one fragment of text, as llama.cpp's llm_tokenizer_spm does
// it (so that ids match llama.cpp's token for token).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace kvengine {

// Appends the tokens of `text` to `out`. `text` is already prepared: spaces escaped to U+2581
// and the space prefix added by the caller. The algorithm:
//   1. split `text` into UTF-8 characters (by lead byte; malformed bytes become 1-byte symbols);
//   2. repeatedly merge the adjacent pair of symbols whose concatenation is a token with the
//      highest score (equal scores: the leftmost pair), until no adjacent pair is a token;
//   3. emit each remaining symbol's id; a symbol that is not a token (a single character absent
//      from the vocabulary) is emitted byte by byte through vocab.byte_to_token.
// Cost: O(c log c) queue operations for c characters, each with an O(log n) vocabulary lookup.
void SpmTokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

}  // namespace kvengine
