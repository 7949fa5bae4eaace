#include "tokenizer/hf_tokenizer_json.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tokenizer/vocab.h"

namespace kvengine::tokenizer_test {
namespace {

constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeUserDefined = 4;
constexpr int32_t kTypeUnused = 5;

// convert_hf_to_gguf.py's does_token_look_special, the part that applies to BPE vocabularies.
bool LooksSpecial(std::string_view t) {
  return (t.starts_with("<|") && t.ends_with("|>") && t.size() >= 4) || t == "<pad>" ||
         t == "<mask>";
}

Result<int64_t> IdOf(const nlohmann::json& value, std::string_view what) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() >= kMaxVocabSize) {
    return InvalidArgument(
        fmt::format("{}: id {} is not in 0..{}", what, value.dump(), kMaxVocabSize - 1));
  }
  return value.get<int64_t>();
}

Result<int32_t> FindToken(const std::vector<std::string>& tokens, std::string_view text) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == text) return static_cast<int32_t>(i);
  }
  return NotFound(fmt::format("token \"{}\" is not in the vocabulary", text));
}

}  // namespace

Status AddHfTokenizerMetadata(const nlohmann::json& j, const HfToGgufOptions& options,
                              GgufWriter& writer) {
  if (!j.contains("model") || j["model"].value("type", "") != "BPE") {
    return InvalidArgument("tokenizer.json: model.type is not \"BPE\"");
  }
  const nlohmann::json& model = j["model"];
  const nlohmann::json& vocab = model.at("vocab");
  const nlohmann::json added =
      j.contains("added_tokens") ? j["added_tokens"] : nlohmann::json::array();

  int64_t size = 0;
  for (const auto& [text, id] : vocab.items()) {
    KV_ASSIGN_OR_RETURN(int64_t i, IdOf(id, "model.vocab"));
    size = std::max(size, i + 1);
  }
  for (const nlohmann::json& t : added) {
    KV_ASSIGN_OR_RETURN(int64_t i, IdOf(t.at("id"), "added_tokens"));
    size = std::max(size, i + 1);
  }
  std::vector<std::string> tokens(size);
  std::vector<int32_t> types(size, kTypeUnused);
  for (int64_t i = 0; i < size; ++i) tokens[i] = fmt::format("[PAD{}]", i);
  for (const auto& [text, id] : vocab.items()) {
    tokens[id.get<int64_t>()] = text;
    types[id.get<int64_t>()] = kTypeNormal;
  }
  for (const nlohmann::json& t : added) {
    const int64_t id = t["id"].get<int64_t>();
    tokens[id] = t.at("content").get<std::string>();
    const bool special = t.value("special", false) || LooksSpecial(tokens[id]);
    types[id] = special ? kTypeControl : kTypeUserDefined;
  }

  std::vector<std::string> merges;
  merges.reserve(model.at("merges").size());
  for (const nlohmann::json& m : model["merges"]) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return InvalidArgument("tokenizer.json: a merge is neither \"a b\" nor [a, b]: " + m.dump());
    }
  }

  KV_RETURN_IF_ERROR(writer.AddString("tokenizer.ggml.model", "gpt2"));
  KV_RETURN_IF_ERROR(writer.AddString("tokenizer.ggml.pre", options.pre));
  KV_RETURN_IF_ERROR(writer.AddStringArray("tokenizer.ggml.tokens", tokens));
  KV_RETURN_IF_ERROR(writer.AddArray("tokenizer.ggml.token_type", std::span<const int32_t>(types)));
  KV_RETURN_IF_ERROR(writer.AddStringArray("tokenizer.ggml.merges", merges));
  if (!options.bos_token.empty()) {
    KV_ASSIGN_OR_RETURN(int32_t bos, FindToken(tokens, options.bos_token));
    KV_RETURN_IF_ERROR(writer.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(bos)));
  }
  if (!options.eos_token.empty()) {
    KV_ASSIGN_OR_RETURN(int32_t eos, FindToken(tokens, options.eos_token));
    KV_RETURN_IF_ERROR(writer.AddU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos)));
  }
  KV_RETURN_IF_ERROR(writer.AddBool("tokenizer.ggml.add_bos_token", options.add_bos));
  KV_RETURN_IF_ERROR(writer.AddBool("tokenizer.ggml.add_eos_token", options.add_eos));
  return Status::Ok();
}

}  // namespace kvengine::tokenizer_test
