#include "tokenizer/bpe.h"

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/symbol_merge.h"
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

// A run of the word that is one token; merging makes the left symbol the merged token
// (symbol_merge.h).
struct Symbol {
  int32_t id;  // Token id, or kNoToken for a character that is not a token (never merges).
  SymbolLinks links;
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
    // One symbol per character of the (byte-alphabet, hence valid UTF-8) word.
    SplitIntoCharSymbols(word_, &symbols_, [&](size_t offset, size_t len) {
      return Symbol{vocab_.Find(word_.substr(offset, len)), {}};
    });
    MergeSymbols<Bigram, BigramAfter>(symbols_, *this);
    ForEachLiveSymbol(symbols_, [&](const Symbol& s) { Emit(s, out); });
  }

  // The merge rules (symbol_merge.h).
  std::optional<Bigram> Offer(int64_t left, int64_t right) const {
    const int32_t left_id = symbols_[size_t(left)].id;
    const int32_t right_id = symbols_[size_t(right)].id;
    const BpeMerge* m = vocab_.FindMerge(left_id, right_id);
    if (m == nullptr) return std::nullopt;
    return Bigram{m->rank, left, right, left_id, right_id, m->result};
  }
  bool Stale(const Bigram& b) const {
    const Symbol& left = symbols_[size_t(b.left)];
    return left.links.next != b.right || left.id != b.left_id ||
           symbols_[size_t(b.right)].id != b.right_id;
  }
  void Absorb(const Bigram& b) { symbols_[size_t(b.left)].id = b.result; }

 private:
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
