#include "tokenizer/spm.h"

#include <optional>

#include "tokenizer/symbol_merge.h"

namespace kvengine {
namespace {

// A run of `text` that is one token candidate; merging moves the right symbol's bytes into the
// left one (symbol_merge.h).
struct SpmSymbol {
  size_t start;  // Byte offset in text.
  SymbolLinks links;
};

// A candidate merge of symbols[left] and symbols[right] (adjacent when it was queued) into the
// token of `score`. It is stale once either side has changed, which `size` detects: merges only
// grow symbols, so left.size + right.size == size iff neither side has merged since.
struct SpmBigram {
  int64_t left;
  int64_t right;
  float score;
  size_t size;
};

// Orders the max-heap: higher score first, then lower left index (the leftmost pair).
struct SpmBigramLess {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void Run(std::vector<int32_t>* out) {
    SplitIntoCharSymbols(text_, &symbols_, [](size_t offset, size_t) {
      return SpmSymbol{offset, {}};
    });
    MergeSymbols<SpmBigram, SpmBigramLess>(symbols_, *this);
    ForEachLiveSymbol(symbols_, [&](const SpmSymbol& s) { Emit(s, out); });
  }

  // The merge rules (symbol_merge.h).
  std::optional<SpmBigram> Offer(int64_t left, int64_t right) const {
    const size_t size = symbols_[size_t(left)].links.size + symbols_[size_t(right)].links.size;
    const int32_t id = vocab_.Find(text_.substr(symbols_[size_t(left)].start, size));
    if (id == kNoToken) return std::nullopt;
    return SpmBigram{left, right, vocab_.score[size_t(id)], size};
  }
  bool Stale(const SpmBigram& b) const {
    return symbols_[size_t(b.left)].links.size + symbols_[size_t(b.right)].links.size != b.size;
  }
  void Absorb(const SpmBigram&) {}  // The text span grows with the size; nothing else changes.

 private:
  void Emit(const SpmSymbol& s, std::vector<int32_t>* out) const {
    const std::string_view piece = text_.substr(s.start, s.links.size);
    const int32_t id = vocab_.Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
    // Only single characters can miss: every merged symbol is a token by construction.
    for (char c : piece) out->push_back(vocab_.byte_to_token[static_cast<unsigned char>(c)]);
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<SpmSymbol> symbols_;
};

}  // namespace

void SpmTokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  SpmSession(vocab, text).Run(out);
}

}  // namespace kvengine
