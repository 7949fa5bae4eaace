#include "tokenizer/vocab.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "tokenizer/bpe.h"

namespace kvengine {
namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyAddBos = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kKeyAddEos = "tokenizer.ggml.add_eos_token";
constexpr std::string_view kKeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr std::string_view kKeyBos = "tokenizer.ggml.bos_token_id";
constexpr std::string_view kKeyEos = "tokenizer.ggml.eos_token_id";
constexpr std::string_view kKeyUnk = "tokenizer.ggml.unknown_token_id";
constexpr std::string_view kKeyEot = "tokenizer.ggml.eot_token_id";
constexpr std::string_view kKeyEom = "tokenizer.ggml.eom_token_id";
constexpr std::string_view kKeyPad = "tokenizer.ggml.padding_token_id";
constexpr std::string_view kKeySep = "tokenizer.ggml.seperator_token_id";  // Sic, as in GGUF.
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";

constexpr int64_t kMaxTokenType = static_cast<int64_t>(TokenType::kByte);

// The special id stored under `key`: kNoToken for the "none" sentinels, `default_id` when the
// key is absent (kNoToken if that default is outside the vocabulary), an error when out of range.
Result<int32_t> ReadSpecialId(const GgufFile& file, std::string_view key, int32_t default_id,
                              int32_t n) {
  if (!file.Has(key)) return default_id >= 0 && default_id < n ? default_id : kNoToken;
  KV_ASSIGN_OR_RETURN(int64_t id, file.GetInt(key));
  if (id == kNoTokenU32 || id == -1) return kNoToken;
  if (id < 0 || id >= n) {
    return OutOfRange(fmt::format("{} is {}, outside the vocabulary of {} tokens", key, id, n));
  }
  return static_cast<int32_t>(id);
}

Result<bool> ReadFlag(const GgufFile& file, std::string_view key, bool default_value) {
  if (!file.Has(key)) return default_value;
  return file.GetBool(key);
}

// The byte of a "<0xXX>" text (either hex case), or nullopt.
std::optional<uint8_t> ParseByteToken(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : s.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return static_cast<uint8_t>(value);
}

// Fills text, score, type and byte_value from the three arrays.
Status ReadTokenArrays(const GgufFile& file, Vocab& v) {
  KV_ASSIGN_OR_RETURN(std::vector<std::string_view> tokens, file.GetStringArray(kKeyTokens));
  if (tokens.empty() || tokens.size() > static_cast<size_t>(kMaxVocabSize)) {
    return OutOfRange(
        fmt::format("{} has {} entries; expected 1..{}", kKeyTokens, tokens.size(), kMaxVocabSize));
  }
  const size_t n = tokens.size();
  v.text.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i].size() > kMaxTokenBytes) {
      return OutOfRange(fmt::format("{}[{}] is {} bytes long; the limit is {}", kKeyTokens, i,
                                    tokens[i].size(), kMaxTokenBytes));
    }
    v.text.emplace_back(tokens[i]);
  }

  v.score.assign(n, 0.0f);
  if (file.Has(kKeyScores)) {
    KV_ASSIGN_OR_RETURN(v.score, file.GetF32Array(kKeyScores));
    if (v.score.size() != n) {
      return Corrupt(fmt::format("{} has {} entries but {} has {}", kKeyScores, v.score.size(),
                                 kKeyTokens, n));
    }
    for (size_t i = 0; i < n; ++i) {
      // NaN would break the strict ordering the merge queue relies on.
      if (std::isnan(v.score[i])) return Corrupt(fmt::format("{}[{}] is NaN", kKeyScores, i));
    }
  }

  v.type.assign(n, TokenType::kNormal);
  if (file.Has(kKeyTokenType)) {
    KV_ASSIGN_OR_RETURN(std::vector<int64_t> types, file.GetIntArray(kKeyTokenType));
    if (types.size() != n) {
      return Corrupt(fmt::format("{} has {} entries but {} has {}", kKeyTokenType, types.size(),
                                 kKeyTokens, n));
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > kMaxTokenType) {
        return Corrupt(
            fmt::format("{}[{}] is {}; expected 0..{}", kKeyTokenType, i, types[i], kMaxTokenType));
      }
      v.type[i] = static_cast<TokenType>(types[i]);
    }
  }

  v.byte_value.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (v.type[i] != TokenType::kByte) continue;
    std::optional<uint8_t> byte = ParseByteToken(v.text[i]);
    if (!byte) {
      return Corrupt(fmt::format("{}[{}] has type byte ({}) but its text is not <0xXX>", kKeyTokens,
                                 i, kKeyTokenType));
    }
    v.byte_value[i] = *byte;
  }
  return Status::Ok();
}

Status ReadSpecialIds(const GgufFile& file, Vocab& v) {
  const int32_t n = v.size();
  // llama.cpp's defaults: the llama family's fixed ids for SentencePiece; none for BPE.
  const bool spm = v.model == TokenizerModel::kSpm;
  KV_ASSIGN_OR_RETURN(v.special.bos, ReadSpecialId(file, kKeyBos, spm ? 1 : kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.eos, ReadSpecialId(file, kKeyEos, spm ? 2 : kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.unk, ReadSpecialId(file, kKeyUnk, spm ? 0 : kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.eot, ReadSpecialId(file, kKeyEot, kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.eom, ReadSpecialId(file, kKeyEom, kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.pad, ReadSpecialId(file, kKeyPad, kNoToken, n));
  KV_ASSIGN_OR_RETURN(v.special.sep, ReadSpecialId(file, kKeySep, kNoToken, n));
  // BPE: only Llama-3 adds BOS by default (llama.cpp), and only when it has one.
  const bool default_bos = spm || (v.pre == PreTokenizer::kLlama3 && v.special.bos != kNoToken);
  KV_ASSIGN_OR_RETURN(v.add_bos, ReadFlag(file, kKeyAddBos, default_bos));
  KV_ASSIGN_OR_RETURN(v.add_eos, ReadFlag(file, kKeyAddEos, false));
  // BPE words carry their own spaces; llama.cpp never adds a prefix to them.
  if (spm) {
    KV_ASSIGN_OR_RETURN(v.add_space_prefix, ReadFlag(file, kKeyAddSpacePrefix, true));
  } else {
    v.add_space_prefix = false;
  }
  if (v.add_bos && v.special.bos == kNoToken) {
    return InvalidArgument(
        fmt::format("{} is true but there is no BOS token ({})", kKeyAddBos, kKeyBos));
  }
  if (v.add_eos && v.special.eos == kNoToken) {
    return InvalidArgument(
        fmt::format("{} is true but there is no EOS token ({})", kKeyAddEos, kKeyEos));
  }
  return Status::Ok();
}

// BPE: the pre-tokenizer (absent: "default", as llama.cpp) and what it implies.
Status ReadPreTokenizer(const GgufFile& file, Vocab& v) {
  std::string_view name = "default";
  if (file.Has(kKeyPre)) {
    KV_ASSIGN_OR_RETURN(name, file.GetString(kKeyPre));
  }
  KV_ASSIGN_OR_RETURN(v.pre, ParsePreTokenizer(name));
  v.ignore_merges = v.pre == PreTokenizer::kLlama3;  // llama.cpp; Llama-3's tokenizer.json too.
  return Status::Ok();
}

// Builds sorted_ids, special_ids_by_length, max_token_bytes and byte_to_token.
Status BuildIndexes(Vocab& v) {
  const int32_t n = v.size();
  v.sorted_ids.resize(n);
  for (int32_t i = 0; i < n; ++i) v.sorted_ids[i] = i;
  std::sort(v.sorted_ids.begin(), v.sorted_ids.end(), [&](int32_t a, int32_t b) {
    if (v.text[a] != v.text[b]) return v.text[a] < v.text[b];
    return a > b;  // Highest id first among equal texts: the one Find returns.
  });

  for (int32_t i = 0; i < n; ++i) {
    v.max_token_bytes = std::max(v.max_token_bytes, v.text[i].size());
    const TokenType t = v.type[i];
    if (!v.text[i].empty() &&
        (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown)) {
      v.special_ids_by_length.push_back(i);
    }
  }
  std::stable_sort(v.special_ids_by_length.begin(), v.special_ids_by_length.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });

  if (v.model == TokenizerModel::kBpe) {
    v.byte_to_token.fill(kNoToken);
    return Status::Ok();
  }
  for (int b = 0; b < 256; ++b) {
    int32_t id = v.Find(fmt::format("<0x{:02X}>", b));
    if (id == kNoToken || v.type[id] != TokenType::kByte) {
      id = v.Find(std::string(1, static_cast<char>(b)));
    }
    if (id == kNoToken) id = v.special.unk;
    if (id == kNoToken) {
      return InvalidArgument(fmt::format(
          "byte 0x{:02X} has no <0x{:02X}> token in {} and there is no unknown token ({})", b, b,
          kKeyTokens, kKeyUnk));
    }
    v.byte_to_token[b] = id;
  }
  return Status::Ok();
}

}  // namespace

int32_t Vocab::Find(std::string_view s) const {
  if (s.size() > max_token_bytes) return kNoToken;
  auto it = std::lower_bound(sorted_ids.begin(), sorted_ids.end(), s,
                             [&](int32_t id, std::string_view key) { return text[id] < key; });
  if (it == sorted_ids.end() || text[*it] != s) return kNoToken;
  return *it;
}

const BpeMerge* Vocab::FindMerge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  const uint64_t key = static_cast<uint64_t>(left) << 32 | static_cast<uint32_t>(right);
  auto it = std::lower_bound(merges.begin(), merges.end(), key,
                             [](const BpeMerge& m, uint64_t k) { return m.pair < k; });
  return it != merges.end() && it->pair == key ? &*it : nullptr;
}

Result<Vocab> LoadVocab(const GgufFile& file) {
  KV_ASSIGN_OR_RETURN(std::string_view model, file.GetString(kKeyModel));
  Vocab v;
  if (model == "llama") {
    v.model = TokenizerModel::kSpm;
  } else if (model == "gpt2") {
    v.model = TokenizerModel::kBpe;
  } else {
    return InvalidArgument(fmt::format(
        "{} is \"{}\"; supported: \"llama\" (SentencePiece) and \"gpt2\" (byte-level BPE)",
        kKeyModel, model.substr(0, 64)));
  }
  KV_RETURN_IF_ERROR(ReadTokenArrays(file, v));
  if (v.model == TokenizerModel::kBpe) KV_RETURN_IF_ERROR(ReadPreTokenizer(file, v));
  KV_RETURN_IF_ERROR(ReadSpecialIds(file, v));
  KV_RETURN_IF_ERROR(BuildIndexes(v));
  if (v.model == TokenizerModel::kBpe) KV_RETURN_IF_ERROR(LoadBpeMerges(file, v));
  return v;
}

}  // namespace kvengine
