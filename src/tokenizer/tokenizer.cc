#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/spm.h"

namespace kvengine {
namespace {

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK "▁".

// A piece of the text being encoded: either raw text or one special token cut out of it.
struct Fragment {
  int32_t token;  // kNoToken for raw text.
  size_t offset;  // Raw text only: the byte range in the input, length >= 1.
  size_t length;
};

// A byte range [begin, end) of the text where control and unknown tokens may be cut out.
struct SpecialRange {
  size_t begin;
  size_t end;
};

// Whether [pos, pos + len) lies inside one of `ranges` (sorted, disjoint).
bool InsideRange(std::span<const SpecialRange> ranges, size_t pos, size_t len) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), pos,
                             [](size_t p, const SpecialRange& r) { return p < r.end; });
  return it != ranges.end() && it->begin <= pos && pos + len <= it->end;
}

// Cuts every occurrence of `needle` (non-empty) out of the raw-text fragments, left to right;
// unless `anywhere`, only occurrences inside `ranges`.
void SplitOn(std::string_view text, std::string_view needle, int32_t id, bool anywhere,
             std::span<const SpecialRange> ranges, std::vector<Fragment>& fragments) {
  std::vector<Fragment> out;
  out.reserve(fragments.size());
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f);
      continue;
    }
    const std::string_view raw = text.substr(f.offset, f.length);
    size_t pos = 0;   // Within raw: bytes before pos are already emitted.
    size_t from = 0;  // Where the next search starts.
    for (size_t hit = raw.find(needle); hit != std::string_view::npos;
         hit = raw.find(needle, from)) {
      if (!anywhere && !InsideRange(ranges, f.offset + hit, needle.size())) {
        from = hit + 1;
        continue;
      }
      if (hit > pos) out.push_back({kNoToken, f.offset + pos, hit - pos});
      out.push_back({id, 0, 0});
      pos = from = hit + needle.size();
    }
    if (pos < raw.size()) out.push_back({kNoToken, f.offset + pos, raw.size() - pos});
  }
  fragments = std::move(out);
}

// Encode's body: control and unknown tokens are cut out only inside `special_ranges`.
std::vector<int32_t> EncodeText(const Vocab& vocab, std::string_view text, bool add_special,
                                std::span<const SpecialRange> special_ranges) {
  std::vector<int32_t> ids;
  // LoadVocab guarantees special.bos / special.eos exist when add_bos / add_eos are set.
  if (add_special && vocab.add_bos) ids.push_back(vocab.special.bos);

  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({kNoToken, 0, text.size()});
  for (int32_t id : vocab.special_ids_by_length) {
    // special_ids_by_length holds only control, user-defined and unknown tokens.
    const bool user_defined = vocab.type[id] == TokenType::kUserDefined;
    if (!user_defined && special_ranges.empty()) continue;
    if (text.find(vocab.text[id]) == std::string_view::npos) continue;
    SplitOn(text, vocab.text[id], id, user_defined, special_ranges, fragments);
  }

  bool after_special = true;  // The text start counts as following a special token.
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      ids.push_back(f.token);
      after_special = true;
      continue;
    }
    if (vocab.model == TokenizerModel::kBpe) {
      BpeTokenize(vocab, text.substr(f.offset, f.length), &ids);
      continue;
    }
    escaped.clear();
    if (vocab.add_space_prefix && after_special) escaped.append(kSpaceEscape);
    for (char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        escaped.append(kSpaceEscape);
      } else {
        escaped.push_back(c);
      }
    }
    SpmTokenize(vocab, escaped, &ids);
    after_special = false;
  }

  if (add_special && vocab.add_eos) ids.push_back(vocab.special.eos);
  return ids;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  KV_ASSIGN_OR_RETURN(Vocab vocab, LoadVocab(file));
  return std::make_unique<Tokenizer>(std::move(vocab));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const SpecialRange whole{0, text.size()};
  return EncodeText(
      vocab_, text, add_special,
      parse_special ? std::span<const SpecialRange>(&whole, 1) : std::span<const SpecialRange>());
}

std::vector<int32_t> Tokenizer::Encode(std::span<const EncodeSegment> segments,
                                       bool add_special) const {
  std::string text;
  std::vector<SpecialRange> ranges;
  for (const EncodeSegment& seg : segments) {
    const size_t begin = text.size();
    text.append(seg.text);
    if (!seg.parse_special || seg.text.empty()) continue;
    if (!ranges.empty() && ranges.back().end == begin) {
      ranges.back().end = text.size();  // Adjacent markup: one range, so a token may span both.
    } else {
      ranges.push_back({begin, text.size()});
    }
  }
  return EncodeText(vocab_, text, add_special, ranges);
}

void Tokenizer::AppendPiece(int32_t id, bool strip_leading_space, std::string* out) const {
  if (!vocab_.IsValid(id)) return;
  const size_t start = out->size();
  const std::string_view text = vocab_.text[id];
  switch (vocab_.type[id]) {
    case TokenType::kUndefined:
    case TokenType::kNormal:
      if (vocab_.model == TokenizerModel::kBpe) {
        AppendFromByteLevel(text, out);
        break;
      }
      for (size_t i = 0; i < text.size();) {
        if (text.substr(i, kSpaceEscape.size()) == kSpaceEscape) {
          out->push_back(' ');
          i += kSpaceEscape.size();
        } else {
          out->push_back(text[i]);
          ++i;
        }
      }
      break;
    case TokenType::kByte:
      out->push_back(static_cast<char>(vocab_.byte_value[id]));
      break;
    case TokenType::kUserDefined:
      out->append(text);
      break;
    case TokenType::kUnknown:
    case TokenType::kControl:
    case TokenType::kUnused:
      break;
  }
  if (strip_leading_space && out->size() > start && (*out)[start] == ' ') {
    out->erase(start, 1);
  }
}

std::string Tokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    AppendPiece(ids[i], StripsLeadingSpace(i, ids[0]), &out);
  }
  return out;
}

std::string_view Tokenizer::Piece(int32_t id) const {
  return vocab_.IsValid(id) ? std::string_view(vocab_.text[id]) : std::string_view();
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  if (id == kNoToken) return false;
  const SpecialTokenIds& s = vocab_.special;
  return id == s.eos || id == s.eot || id == s.eom;
}

}  // namespace kvengine
