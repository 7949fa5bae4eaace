#include "synth/synthetic_vocab.h"

#include <set>
#include <string_view>

#include <fmt/format.h>

#include "base/check.h"

namespace kvengine {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK, "▁".

// Newlines and other control characters are left to byte fallback, as in llama's vocabulary.
constexpr std::string_view kPunctuation[] = {".", ",", "!", "?", "'", "\"",
                                             "-", ":", ";", "(", ")"};

// Frequent English words (each gets a leading "▁") and word endings (without one).
constexpr std::string_view kWords[] = {
    "the",   "and",  "to",    "a",      "of",    "was",   "he",      "she",   "it",     "in",
    "you",   "that", "is",    "for",    "on",    "with",  "they",    "her",   "his",    "said",
    "had",   "as",   "at",    "but",    "be",    "not",   "we",      "have",  "this",   "from",
    "or",    "one",  "all",   "were",   "there", "what",  "so",      "up",    "out",    "if",
    "about", "who",  "get",   "which",  "go",    "me",    "when",    "can",   "like",   "time",
    "no",    "just", "him",   "know",   "take",  "into",  "day",     "your",  "good",   "some",
    "could", "them", "see",   "other",  "than",  "then",  "now",     "look",  "only",   "come",
    "its",   "over", "think", "also",   "back",  "after", "two",     "how",   "our",    "work",
    "first", "well", "way",   "even",   "new",   "want",  "because", "any",   "these",  "give",
    "most",  "very", "big",   "little", "play",  "happy", "friend",  "once",  "upon",   "mom",
    "dog",   "cat",  "tree",  "ball",   "saw",   "went",  "wanted",  "named", "girl",   "boy",
    "park",  "sun",  "fun",   "toy",    "help",  "love",  "loved",   "home",  "smiled", "are",
};
constexpr std::string_view kEndings[] = {"ing", "ed", "er", "es", "ly", "tion", "est", "s"};

class VocabBuilder {
 public:
  explicit VocabBuilder(int n_vocab) : n_vocab_(static_cast<size_t>(n_vocab)) {}

  bool full() const { return vocab_.tokens.size() >= n_vocab_; }

  void Add(std::string token, float score, int32_t type) {
    if (full() || !seen_.insert(token).second) return;
    vocab_.tokens.push_back(std::move(token));
    vocab_.scores.push_back(score);
    vocab_.types.push_back(type);
  }

  // A normal piece, after its prefix without the last byte (pieces here end in ASCII) unless
  // that prefix is empty or a lone "▁".
  void AddPiece(std::string_view piece) {
    if (piece.size() > 1 && piece != kSpace && piece.substr(0, piece.size() - 1) != kSpace) {
      AddPiece(piece.substr(0, piece.size() - 1));
    }
    const float score = -static_cast<float>(vocab_.tokens.size() - kSynthFirstPieceId);
    Add(std::string(piece), score, kTokenTypeNormal);
  }

  // A piece with and without a leading "▁".
  void AddBoth(std::string_view s) {
    AddPiece(std::string(kSpace) + std::string(s));
    AddPiece(s);
  }

  // Every lowercase string of `length` letters in lexicographic order, via AddBoth.
  void AddAllOfLength(int length) {
    std::string s(static_cast<size_t>(length), 'a');
    while (!full()) {
      AddBoth(s);
      int i = length - 1;  // Odometer increment from the last letter.
      while (i >= 0 && s[static_cast<size_t>(i)] == 'z') s[static_cast<size_t>(i--)] = 'a';
      if (i < 0) return;
      ++s[static_cast<size_t>(i)];
    }
  }

  SyntheticVocab Take() { return std::move(vocab_); }

 private:
  size_t n_vocab_;
  std::set<std::string, std::less<>> seen_;
  SyntheticVocab vocab_;
};

}  // namespace

SyntheticVocab MakeSyntheticVocab(int n_vocab) {
  KV_CHECK(n_vocab > static_cast<int>(kSynthFirstPieceId));
  VocabBuilder b(n_vocab);
  b.Add("<unk>", 0.0f, kTokenTypeUnknown);
  b.Add("<s>", 0.0f, kTokenTypeControl);
  b.Add("</s>", 0.0f, kTokenTypeControl);
  for (int byte = 0; byte < 256; ++byte)
    b.Add(fmt::format("<0x{:02X}>", byte), 0.0f, kTokenTypeByte);
  b.AddPiece(kSpace);
  for (char c = 'a'; c <= 'z'; ++c) b.AddBoth(std::string(1, c));
  for (std::string_view p : kPunctuation) b.AddPiece(p);
  for (char c = 'A'; c <= 'Z'; ++c) b.AddBoth(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) b.AddBoth(std::string(1, c));
  for (std::string_view w : kWords) b.AddPiece(std::string(kSpace) + std::string(w));
  for (std::string_view e : kEndings) b.AddPiece(e);
  for (int length = 2; !b.full(); ++length) b.AddAllOfLength(length);
  return b.Take();
}

}  // namespace kvengine
