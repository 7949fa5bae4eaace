#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>
#include <string>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";

uint64_t PairKey(int32_t left, int32_t right) {
  return static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
}

// `text` with every byte outside a well-formed character replaced by U+FFFD (llama.cpp's rule;
// ScanUtf8 is strict, so overlong forms and surrogates count as malformed here too).
std::string ReplaceInvalidBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8ScanResult r = ScanUtf8(text, pos);
    if (r.scan == Utf8Scan::kValid) {
      out.append(text.substr(pos, r.length));
      pos += r.length;
    } else {
      out.append(kUtf8Replacement);
      ++pos;  // One U+FFFD per byte, as llama.cpp.
    }
  }
  return out;
}

// A run of the word that is one token. Symbols form a doubly linked list in word order;
// merging makes the left symbol the merged token and marks the right one dead.
struct Symbol {
  int32_t id;    // Token id, or kNoToken for a character that is not a token (never merges).
  size_t size;   // Bytes; 0 once dead.
  int64_t prev;  // Index of the previous live symbol, -1 at the front.
  int64_t next;  // Index of the next live symbol, -1 at the back.
};

// A candidate merge of symbols[left] and symbols[right]. It is stale once either side has
// changed: a symbol's id only changes by absorbing its right neighbour (into a longer token),
// so matching ids and adjacency prove neither side has merged since it was queued.
struct Bigram {
  int32_t rank;
  int64_t left;
  int64_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

// Orders the priority queue so that top() is the lowest rank, then the leftmost pair.
struct BigramAfter {
  bool operator()(const Bigram& a, const Bigram& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.left > b.left;
  }
};

class BpeWord {
 public:
  BpeWord(const Vocab& vocab, std::string_view word) : vocab_(vocab), word_(word) {}

  void Run(std::vector<int32_t>* out) {
    Split();
    for (size_t i = 1; i < symbols_.size(); ++i) {
      TryAddBigram(static_cast<int64_t>(i) - 1, static_cast<int64_t>(i));
    }
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[b.left];
      Symbol& right = symbols_[b.right];
      if (left.size == 0 || right.size == 0 || left.next != b.right || left.id != b.left_id ||
          right.id != b.right_id) {
        continue;
      }
      left.id = b.result;
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
  // One symbol per character of the (byte-alphabet, hence valid UTF-8) word.
  void Split() {
    size_t pos = 0;
    while (pos < word_.size()) {
      const size_t len =
          std::min(Utf8LengthFromLead(static_cast<unsigned char>(word_[pos])), word_.size() - pos);
      const auto index = static_cast<int64_t>(symbols_.size());
      const bool last = pos + len == word_.size();
      symbols_.push_back(
          {vocab_.Find(word_.substr(pos, len)), len, index - 1, last ? -1 : index + 1});
      pos += len;
    }
  }

  void TryAddBigram(int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const int32_t left_id = symbols_[left].id;
    const int32_t right_id = symbols_[right].id;
    const BpeMerge* m = vocab_.FindMerge(left_id, right_id);
    if (m == nullptr) return;
    queue_.push({m->rank, left, right, left_id, right_id, m->result});
  }

  void Emit(const Symbol& s, std::vector<int32_t>* out) const {
    if (s.id != kNoToken) {
      out->push_back(s.id);
    } else if (vocab_.special.unk != kNoToken) {
      out->push_back(vocab_.special.unk);
    }  // Else dropped: the vocabulary cannot express this character.
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramAfter> queue_;
};

}  // namespace

Status LoadBpeMerges(const GgufFile& file, Vocab& vocab) {
  if (!file.Has(kKeyMerges)) {
    return NotFound(fmt::format("{} is missing; \"gpt2\" tokenizers need it", kKeyMerges));
  }
  KV_ASSIGN_OR_RETURN(std::vector<std::string_view> merges, file.GetStringArray(kKeyMerges));
  if (merges.size() > kMaxMerges) {
    return OutOfRange(
        fmt::format("{} has {} entries; the limit is {}", kKeyMerges, merges.size(), kMaxMerges));
  }
  std::vector<BpeMerge> table;
  table.reserve(merges.size());
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string_view m = merges[i];
    // From the second byte on, so that a merge of a token that is a space itself still splits.
    const size_t space = m.size() < 2 ? std::string_view::npos : m.find(' ', 1);
    if (space == std::string_view::npos) {
      return Corrupt(
          fmt::format("{}[{}] (\"{}\") is not \"left right\"", kKeyMerges, i, m.substr(0, 64)));
    }
    const std::string_view left = m.substr(0, space);
    const std::string_view right = m.substr(space + 1);
    joined.assign(left);
    joined.append(right);
    const int32_t left_id = vocab.Find(left);
    const int32_t right_id = vocab.Find(right);
    const int32_t result = vocab.Find(joined);
    if (left_id == kNoToken || right_id == kNoToken || result == kNoToken) continue;
    table.push_back({PairKey(left_id, right_id), static_cast<int32_t>(i), result});
  }
  // Sorted by pair, lowest rank first within a pair; then the first of each pair is kept.
  std::sort(table.begin(), table.end(), [](const BpeMerge& a, const BpeMerge& b) {
    return a.pair != b.pair ? a.pair < b.pair : a.rank < b.rank;
  });
  table.erase(std::unique(table.begin(), table.end(),
                          [](const BpeMerge& a, const BpeMerge& b) { return a.pair == b.pair; }),
              table.end());
  vocab.merges = std::move(table);
  return Status::Ok();
}

void BpeTokenize(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  std::string repaired;
  if (!IsValidUtf8(text)) {
    repaired = ReplaceInvalidBytes(text);
    text = repaired;
  }
  std::string word;
  for (std::string_view piece : PreTokenize(vocab.pre, text)) {
    word.clear();
    AppendByteLevel(piece, &word);
    if (vocab.ignore_merges) {
      if (const int32_t id = vocab.Find(word); id != kNoToken) {
        out->push_back(id);
        continue;
      }
    }
    BpeWord(vocab, word).Run(out);
  }
}

}  // namespace kvengine
