#include "tokenizer/spm.h"

#include <queue>

#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

// A run of `text` that is one token candidate. Symbols form a doubly linked list in text order;
// merging moves the right symbol's bytes into the left one and sets the right's length to 0.
struct Symbol {
  size_t start;  // Byte offset in text.
  size_t size;   // Bytes; 0 once merged into its left neighbour.
  int64_t prev;  // Index of the previous live symbol, -1 at the front.
  int64_t next;  // Index of the next live symbol, -1 at the back.
};

// A candidate merge of symbols[left] and symbols[right] (adjacent when it was queued) into the
// token of `score`. It is stale once either side has changed, which `size` detects: merges only
// grow symbols, so left.size + right.size == size iff neither side has merged since.
struct Bigram {
  int64_t left;
  int64_t right;
  float score;
  size_t size;
};

// Orders the max-heap: higher score first, then lower left index (the leftmost pair).
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void Run(std::vector<int32_t>* out) {
    if (text_.empty()) return;
    Split();
    for (size_t i = 1; i < symbols_.size(); ++i) TryAddBigram(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      if (left.size == 0 || right.size == 0 || left.size + right.size != b.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = b.left;
      TryAddBigram(left.prev, b.left);
      TryAddBigram(b.left, left.next);
    }
    for (int64_t i = 0; i != -1; i = symbols_[i].next) Emit(symbols_[i], out);
  }

 private:
  void Split() {
    size_t offset = 0;
    while (offset < text_.size()) {
      const size_t len = std::min(Utf8LengthFromLead(static_cast<unsigned char>(text_[offset])),
                                  text_.size() - offset);
      const auto index = static_cast<int64_t>(symbols_.size());
      symbols_.push_back({offset, len, index - 1, offset + len == text_.size() ? -1 : index + 1});
      offset += len;
    }
  }

  void TryAddBigram(int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols_[left].size + symbols_[right].size;
    const int32_t id = vocab_.Find(text_.substr(symbols_[left].start, size));
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.score[id], size});
  }

  void Emit(const Symbol& s, std::vector<int32_t>* out) const {
    const std::string_view piece = text_.substr(s.start, s.size);
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
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue_;
};

}  // namespace

void SpmTokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  SpmSession(vocab, text).Run(out);
}

}  // namespace kvengine
