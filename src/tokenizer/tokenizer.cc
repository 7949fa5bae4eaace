#include "tokenizer/tokenizer.h"

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

// Cuts every occurrence of `needle` (non-empty) out of the raw-text fragments, left to right.
void SplitOn(std::string_view text, std::string_view needle, int32_t id,
             std::vector<Fragment>& fragments) {
  std::vector<Fragment> out;
  out.reserve(fragments.size());
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f);
      continue;
    }
    const std::string_view raw = text.substr(f.offset, f.length);
    size_t pos = 0;  // Within raw: bytes before pos are already emitted.
    for (size_t hit = raw.find(needle); hit != std::string_view::npos;
         hit = raw.find(needle, pos)) {
      if (hit > pos) out.push_back({kNoToken, f.offset + pos, hit - pos});
      out.push_back({id, 0, 0});
      pos = hit + needle.size();
    }
    if (pos < raw.size()) out.push_back({kNoToken, f.offset + pos, raw.size() - pos});
  }
  fragments = std::move(out);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  KV_ASSIGN_OR_RETURN(Vocab vocab, LoadVocab(file));
  return std::make_unique<Tokenizer>(std::move(vocab));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> ids;
  // LoadVocab guarantees special.bos / special.eos exist when add_bos / add_eos are set.
  if (add_special && vocab_.add_bos) ids.push_back(vocab_.special.bos);

  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({kNoToken, 0, text.size()});
  for (int32_t id : vocab_.special_ids_by_length) {
    const TokenType type = vocab_.type[id];
    // special_ids_by_length holds only control, user-defined and unknown tokens.
    if (type != TokenType::kUserDefined && !parse_special) continue;
    if (text.find(vocab_.text[id]) == std::string_view::npos) continue;
    SplitOn(text, vocab_.text[id], id, fragments);
  }

  bool after_special = true;  // The text start counts as following a special token.
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      ids.push_back(f.token);
      after_special = true;
      continue;
    }
    if (vocab_.model == TokenizerModel::kBpe) {
      BpeTokenize(vocab_, text.substr(f.offset, f.length), &ids);
      continue;
    }
    escaped.clear();
    if (vocab_.add_space_prefix && after_special) escaped.append(kSpaceEscape);
    for (char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        escaped.append(kSpaceEscape);
      } else {
        escaped.push_back(c);
      }
    }
    SpmTokenize(vocab_, escaped, &ids);
    after_special = false;
  }

  if (add_special && vocab_.add_eos) ids.push_back(vocab_.special.eos);
  return ids;
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
