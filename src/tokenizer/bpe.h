// Byte-level BPE ("gpt2" vocabularies: GPT-2, Llama-3, Qwen), as llama.cpp's llm_tokenizer_bpe
// and Hugging Face's BPE model do it, so that ids match theirs token for token.
//
// Encoding one fragment of raw text (special tokens are already cut out by the caller):
//   1. Invalid UTF-8: each byte that does not belong to a well-formed character becomes U+FFFD
//      (llama.cpp's unicode_cpts_from_utf8 does the same), so such text encodes as if it held
//      U+FFFD there and does not round-trip. Valid UTF-8 always round-trips.
//   2. The pre-tokenizer (pretokenize.h) splits the text into words.
//   3. Each word is written in the byte-level alphabet (byte_level.h). With vocab.ignore_merges
//      (Llama-3) a word that is itself a token is emitted whole.
//   4. Otherwise the word starts as one symbol per character and the adjacent pair with the
//      lowest merge rank is merged, leftmost first among equal ranks, until no adjacent pair
//      has a merge. Each symbol is then emitted as its token. A character that is not a token
//      (only in a vocabulary that lacks part of the byte alphabet) becomes special.unk when the
//      model has one and is dropped otherwise (Hugging Face's behaviour without byte fallback).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/vocab.h"

namespace kvengine {

inline constexpr size_t kMaxMerges = size_t{1} << 24;  // Real vocabularies have < 1M merges.

// Reads tokenizer.ggml.merges (string array, each "left right": split at the first space after
// the first byte, as llama.cpp does) into vocab.merges; requires vocab.text and its indexes.
// Merge i has rank i. A merge whose left, right or concatenation is not a token can never
// apply and is skipped; of repeated pairs the first (lowest rank) counts. A merge without a
// space is an error naming its index.
Status LoadBpeMerges(const GgufFile& file, Vocab& vocab);

// Appends the tokens of the raw text `text` to `out` (steps 1-4 above).
void BpeTokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out);

}  // namespace kvengine
