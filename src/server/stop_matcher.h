// StopMatcher: applies stop strings to a stream of generated text without ever showing part of
// one. Text that could still be the start of a stop string is held back until the next piece
// decides it: either the stop string completes (everything from its first byte on is dropped,
// as OpenAI's API does) or it cannot any more (the held text is released).
//
// Invariant: concatenating every Push() result and Finish() gives the generated text cut just
// before the earliest occurrence of any stop string (or all of it when none occurs). The held
// tail is always shorter than the longest stop string.
//
// Text boundaries: the input is valid UTF-8 (StreamDecoder's output) and stop strings are valid
// UTF-8, so a held tail always starts at a character boundary (it starts with a stop string's
// first byte, which is never a continuation byte): released text stays valid UTF-8.
//
// One per choice; one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvengine::server {

class StopMatcher {
 public:
  // Empty strings in `stops` are ignored.
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns the part that is safe to show now. Once stopped(), returns "".
  std::string Push(std::string_view text);
  // Releases the held tail (generation ended without completing a stop string); "" when stopped.
  std::string Finish();

  bool stopped() const { return stopped_; }
  // The stop string that matched (empty when none has).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // Unreleased tail: a proper prefix of some stop string's end-match.
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace kvengine::server
