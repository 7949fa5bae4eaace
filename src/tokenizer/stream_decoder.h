// StreamDecoder: turns a stream of generated token ids into text that is always valid UTF-8.
//
// A character may be spread over several byte tokens ("<0xF0>" "<0x9F>" "<0x98>" "<0x80>" is
// one emoji). Push() returns only complete characters and holds back the bytes of a character
// that is still incomplete (at most 3); bytes that can no longer form a valid character are
// replaced by U+FFFD as soon as that is certain. Finish() flushes the held-back bytes (U+FFFD if
// they are an incomplete character) and resets the decoder for a new stream.
//
// Invariant: the concatenation of every Push() and the final Finish() equals
// SanitizeUtf8(tokenizer.Decode(all ids)) — Decode(ids) itself whenever that is valid UTF-8 —
// including Decode's rule that a leading BOS makes the next piece lose its leading space.
//
// Ownership and threads: one decoder per stream, used by one thread at a time; it refers to
// the Tokenizer, which must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace kvengine {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // The text that `id` completes; may be empty.
  std::string Push(int32_t id);
  // The held-back bytes, repaired; then the decoder starts a new stream.
  std::string Finish();

 private:
  const Tokenizer& tokenizer_;
  size_t index_ = 0;             // Ids pushed since the stream started.
  int32_t first_id_ = kNoToken;  // The stream's first id (for the leading-BOS rule).
  std::string pending_;          // Undecided bytes: a truncated but so far valid character.
};

}  // namespace kvengine
