// The merge loop that SentencePiece (spm.cc) and byte-level BPE (bpe.cc) share. A word is split
// into one symbol per character, kept as a doubly linked list in text order; candidate merges of
// two adjacent symbols wait in a priority queue. The best candidate is applied unless it is
// stale (a side changed since it was queued): the left symbol absorbs the right one, and the
// pairs it now forms with its neighbours become candidates. The tokenizers differ only in what
// makes a candidate, how it is ordered and when it is stale.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

namespace kvengine {

// The links every symbol type carries.
struct SymbolLinks {
  size_t size = 0;    // Bytes; 0 once absorbed by its left neighbour.
  int64_t prev = -1;  // Index of the previous live symbol, -1 at the front.
  int64_t next = -1;  // Index of the next live symbol, -1 at the back.
};

// Calls add(offset, length) for each character of `text` in order (a truncated last character
// is its remaining bytes) and links what add returned into `symbols`.
template <class Symbol, class Add>
void SplitIntoCharSymbols(std::string_view text, std::vector<Symbol>* symbols, const Add& add) {
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t len = std::min(Utf8LengthFromLead(static_cast<unsigned char>(text[offset])),
                                text.size() - offset);
    const auto index = static_cast<int64_t>(symbols->size());
    Symbol s = add(offset, len);
    s.links = {len, index - 1, offset + len == text.size() ? -1 : index + 1};
    symbols->push_back(s);
    offset += len;
  }
}

// Merges `symbols` (from SplitIntoCharSymbols) until no candidate is left. `rules` provides
//   std::optional<Candidate> Offer(int64_t left, int64_t right): the candidate merge of two
//       adjacent live symbols, if any; Candidate has int64_t `left` and `right`;
//   bool Stale(const Candidate&): a side changed since the candidate was queued;
//   void Absorb(const Candidate&): the left symbol becomes the merged one (before the links
//       and sizes change);
// and Better orders candidates as std::priority_queue's comparator (top() is the next merge).
template <class Candidate, class Better, class Symbol, class Rules>
void MergeSymbols(std::vector<Symbol>& symbols, Rules& rules) {
  std::priority_queue<Candidate, std::vector<Candidate>, Better> queue;
  const auto offer = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    if (std::optional<Candidate> c = rules.Offer(left, right)) queue.push(*c);
  };
  for (size_t i = 1; i < symbols.size(); ++i) offer(static_cast<int64_t>(i) - 1, int64_t(i));
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    SymbolLinks& left = symbols[size_t(c.left)].links;
    SymbolLinks& right = symbols[size_t(c.right)].links;
    if (left.size == 0 || right.size == 0 || rules.Stale(c)) continue;
    rules.Absorb(c);
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].links.prev = c.left;
    offer(left.prev, c.left);
    offer(c.left, left.next);
  }
}

// Calls emit(symbol) for each live symbol in text order.
template <class Symbol, class Emit>
void ForEachLiveSymbol(const std::vector<Symbol>& symbols, const Emit& emit) {
  if (symbols.empty()) return;
  for (int64_t i = 0; i != -1; i = symbols[size_t(i)].links.next) emit(symbols[size_t(i)]);
}

}  // namespace kvengine
