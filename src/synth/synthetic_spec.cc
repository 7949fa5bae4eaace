#include "synth/synthetic_spec.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "base/sha256.h"
#include "base/size_parse.h"
#include "quant/weight_encode.h"

namespace kvengine {
namespace {

// Bounds that keep every product in SyntheticModelParams and the file size inside 64 bits
// (layers x 4 x 2^40 elements x 4 bytes < 2^63) and match ModelConfigFromGguf's limits.
constexpr int kMaxLayers = 4096;
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int kMaxVocab = 1 << 21;
constexpr size_t kMaxNameBytes = 64;
// The weight types a synthetic model can be written in (IsEncodableWeightType), as the error
// messages list them.
constexpr const char* kWeightTypeNames =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K";

bool IsFileSafeName(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes || s[0] == '.') return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsArchitectureName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Status Range(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status::Ok();
  return InvalidArgument(
      fmt::format("synthetic model: {} = {} is outside [{}, {}]", field, value, lo, hi));
}

template <typename T>
Status ParseInt(std::string_view key, std::string_view text, T* out) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(fmt::format("synthetic model: {}: '{}' is not an integer", key, text));
  }
  *out = value;
  return Status::Ok();
}

Status ParseFloat(std::string_view key, std::string_view text, float* out) {
  float value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return InvalidArgument(fmt::format("synthetic model: {}: '{}' is not a number", key, text));
  }
  *out = value;
  return Status::Ok();
}

Status ParseBool(std::string_view key, std::string_view text, bool* out) {
  if (text == "true" || text == "1" || text == "yes") {
    *out = true;
  } else if (text == "false" || text == "0" || text == "no") {
    *out = false;
  } else {
    return InvalidArgument(
        fmt::format("synthetic model: {}: '{}' is not true/false/1/0/yes/no", key, text));
  }
  return Status::Ok();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

SyntheticModelSpec Tiny() {
  SyntheticModelSpec s;  // The struct's defaults are the tiny shape.
  s.name = "tiny";
  return s;
}

bool IsGemma(std::string_view arch) { return arch == "gemma2" || arch == "gemma3"; }

// One tiny model per architecture, for end-to-end tests of each (2-6 layers of 64 wide).
SyntheticModelSpec Llama3Tiny() {
  SyntheticModelSpec s = Tiny();
  s.name = "llama3-tiny";
  s.n_heads = 8;
  s.n_kv_heads = 2;  // GQA 4:1, as Llama-3-8B's 32 query heads over 8 KV heads.
  s.head_dim = 16;   // q_dim 128 > n_embd 64: key_length is written.
  s.context_length = 1024;
  s.rope_theta = 500000.0f;
  s.rms_eps = 1e-5f;
  s.rope_freqs = true;
  return s;
}

SyntheticModelSpec Qwen2Tiny() {
  SyntheticModelSpec s = Tiny();
  s.name = "qwen2-tiny";
  s.architecture = "qwen2";
  s.context_length = 1024;
  s.rope_theta = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.tied_output = true;  // As Qwen2.5-0.5B.
  return s;
}

SyntheticModelSpec GemmaTiny(const char* name, const char* arch) {
  SyntheticModelSpec s = Tiny();
  s.name = name;
  s.architecture = arch;
  s.head_dim = 32;  // q_dim 128 != n_embd 64, as Gemma's head_dim 256 at n_embd 2304.
  s.context_length = 1024;
  s.sliding_window = 32;  // Two blocks of 16: tests of a few hundred tokens slide it.
  s.rms_eps = 1e-6f;
  s.tied_output = true;
  return s;
}

SyntheticModelSpec Small() {
  SyntheticModelSpec s;
  s.name = "small";
  s.n_layers = 12;
  s.n_embd = 768;
  s.n_heads = 12;
  s.n_kv_heads = 4;
  s.n_ff = 2048;
  s.n_vocab = 32000;
  s.context_length = 4096;
  s.weight_type = GgmlType::kF16;
  return s;
}

}  // namespace

Status SyntheticModelSpec::Validate() const {
  if (!IsFileSafeName(name)) {
    return InvalidArgument(fmt::format(
        "synthetic model: name '{}' must be 1-64 of [A-Za-z0-9._-], not starting with '.'", name));
  }
  if (!IsArchitectureName(architecture)) {
    return InvalidArgument(
        fmt::format("synthetic model: architecture '{}' must be 1-32 of [a-z0-9_]", architecture));
  }
  KV_RETURN_IF_ERROR(Range("n_layers", n_layers, 1, kMaxLayers));
  KV_RETURN_IF_ERROR(Range("n_embd", n_embd, 1, kMaxDim));
  KV_RETURN_IF_ERROR(Range("n_heads", n_heads, 1, 65536));
  KV_RETURN_IF_ERROR(Range("n_kv_heads", n_kv_heads, 1, n_heads));
  if (n_heads % n_kv_heads != 0) {
    return InvalidArgument(
        fmt::format("synthetic model: n_heads ({}) must be a multiple of n_kv_heads ({})", n_heads,
                    n_kv_heads));
  }
  if (head_dim == 0 && n_embd % n_heads != 0) {
    return InvalidArgument(fmt::format(
        "synthetic model: n_embd ({}) must be a multiple of n_heads ({}) unless head_dim is set",
        n_embd, n_heads));
  }
  KV_RETURN_IF_ERROR(Range("head_dim", head_dim, 0, 65536));
  KV_RETURN_IF_ERROR(Range("n_heads * head_dim", int64_t{n_heads} * HeadDim(), 1, kMaxDim));
  KV_RETURN_IF_ERROR(Range("n_ff", n_ff, 1, kMaxDim));
  KV_RETURN_IF_ERROR(Range("n_vocab", n_vocab, kSyntheticMinVocab, kMaxVocab));
  KV_RETURN_IF_ERROR(Range("context_length", context_length, 1, (int64_t{1} << 32) - 1));
  KV_RETURN_IF_ERROR(Range("sliding_window", sliding_window, 0, std::numeric_limits<int>::max()));
  if (!(std::isfinite(rope_theta) && rope_theta > 0)) {
    return InvalidArgument(fmt::format("synthetic model: rope_theta {} must be > 0", rope_theta));
  }
  if (!(std::isfinite(rms_eps) && rms_eps > 0 && rms_eps < 1)) {
    return InvalidArgument(fmt::format("synthetic model: rms_eps {} must be in (0, 1)", rms_eps));
  }
  if (rope_freqs && architecture != "llama") {
    return InvalidArgument(fmt::format(
        "synthetic model: rope_freqs is a llama (Llama-3) tensor, not one of '{}'", architecture));
  }
  if (rope_freqs && HeadDim() % 2 != 0) {
    return InvalidArgument("synthetic model: rope_freqs needs an even head_dim");
  }
  for (const auto& [field, cap] : {std::pair{"attn_softcap", attn_softcap},
                                   std::pair{"final_softcap", final_softcap}}) {
    if (!(std::isfinite(cap) && cap >= 0)) {
      return InvalidArgument(fmt::format("synthetic model: {} {} must be >= 0", field, cap));
    }
  }
  if (architecture == "gemma2" && (attn_softcap <= 0 || final_softcap <= 0)) {
    return InvalidArgument("synthetic model: gemma2 needs attn_softcap and final_softcap > 0");
  }
  if (attn_softcap > 0 && architecture != "gemma2") {
    return InvalidArgument(fmt::format(
        "synthetic model: attn_softcap is gemma2's; architecture '{}' has none", architecture));
  }
  if (final_softcap > 0 && !IsGemma(architecture)) {
    return InvalidArgument(fmt::format(
        "synthetic model: final_softcap is gemma's; architecture '{}' has none", architecture));
  }
  if (IsGemma(architecture) && !tied_output) {
    return InvalidArgument("synthetic model: gemma ties its output to token_embd (tied_output)");
  }
  if (!IsEncodableWeightType(weight_type)) {
    return InvalidArgument(fmt::format("synthetic model: weight_type {} is not supported ({})",
                                       GgmlTypeName(weight_type), kWeightTypeNames));
  }
  // Every matrix is stored as weight_type, so each row (dims[0]: n_embd, n_ff or
  // n_heads * head_dim long) must be a whole number of its blocks: 32 elements, 256 for the
  // K-quants. Policy: such a spec is an error naming the type and the dimension. llama.cpp's
  // quantizer instead falls back per tensor (q4_K -> q5_0, q6_K -> q8_0, ...) for rows not a
  // multiple of 256; here a model asked for in q4_K is q4_K throughout, so tests of a type test
  // that type, and a file's type is its spec's.
  const uint32_t block = GetGgmlTypeTraits(weight_type).block_size;
  const int64_t q_dim = int64_t{n_heads} * HeadDim();
  for (const auto& [field, value] :
       {std::pair{"n_embd", int64_t{n_embd}}, std::pair{"n_ff", int64_t{n_ff}},
        std::pair{"n_heads * head_dim", q_dim}}) {
    if (value % block != 0) {
      return InvalidArgument(fmt::format(
          "synthetic model: weight_type {} needs n_embd, n_ff and n_heads * head_dim to be "
          "multiples of {} (its block size); {} is {}",
          GgmlTypeName(weight_type), block, field, value));
    }
  }
  return Status::Ok();
}

Result<SyntheticModelSpec> FindSyntheticPreset(std::string_view name) {
  if (name == "tiny") return Tiny();
  if (name == "small") return Small();
  if (name == "llama-1b") {
    SyntheticModelSpec s;
    s.name = "llama-1b";
    s.n_layers = 16;
    s.n_embd = 2048;
    s.n_heads = 32;
    s.n_kv_heads = 8;
    s.n_ff = 5632;
    s.n_vocab = 32000;
    s.context_length = 32768;
    s.weight_type = GgmlType::kF16;
    return s;
  }
  if (name == "mistral-tiny") {
    SyntheticModelSpec s = Tiny();
    s.name = "mistral-tiny";
    s.context_length = 1024;
    s.sliding_window = 64;
    return s;
  }
  if (name == "mistral-small") {
    SyntheticModelSpec s = Small();
    s.name = "mistral-small";
    s.sliding_window = 1024;
    return s;
  }
  if (name == "llama3-tiny") return Llama3Tiny();
  if (name == "qwen2-tiny") return Qwen2Tiny();
  if (name == "gemma2-tiny") {
    SyntheticModelSpec s = GemmaTiny("gemma2-tiny", "gemma2");
    s.n_layers = 4;  // Layers 0 and 2 windowed, 1 and 3 global.
    s.attn_softcap = 50.0f;  // Gemma 2's values.
    s.final_softcap = 30.0f;
    return s;
  }
  if (name == "gemma3-tiny") {
    SyntheticModelSpec s = GemmaTiny("gemma3-tiny", "gemma3");
    s.n_layers = 6;  // Layers 0-4 windowed, 5 global.
    s.rope_theta = 1000000.0f;  // Global layers; windowed ones use 10000.
    return s;
  }
  return NotFound(fmt::format("unknown synthetic model preset '{}' (known: {})", name,
                              fmt::join(SyntheticPresetNames(), ", ")));
}

std::vector<std::string> SyntheticPresetNames() {
  return {"tiny",        "small",      "llama-1b",    "mistral-tiny", "mistral-small",
          "llama3-tiny", "qwen2-tiny", "gemma2-tiny", "gemma3-tiny"};
}

std::vector<std::string> SyntheticSpecKeys() {
  return {"name",    "architecture",   "n_layers",       "n_embd",
          "n_heads", "n_kv_heads",     "head_dim",       "n_ff",
          "n_vocab", "context_length", "sliding_window", "rope_theta",
          "rms_eps", "weight_type",    "tied_output",    "seed",
          "rope_freqs", "attn_softcap", "final_softcap"};
}

Status ApplySyntheticOverride(std::string_view key, std::string_view value,
                              SyntheticModelSpec* spec) {
  SyntheticModelSpec s = *spec;  // Committed only on success.
  if (key == "name") {
    s.name = std::string(value);
  } else if (key == "architecture") {
    s.architecture = std::string(value);
  } else if (key == "n_layers") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_layers));
  } else if (key == "n_embd") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_embd));
  } else if (key == "n_heads") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_heads));
  } else if (key == "n_kv_heads") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_kv_heads));
  } else if (key == "head_dim") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.head_dim));
  } else if (key == "n_ff") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_ff));
  } else if (key == "n_vocab") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.n_vocab));
  } else if (key == "context_length") {
    Result<uint64_t> tokens = ParseTokenCount(value);
    if (!tokens.ok() || *tokens > uint64_t{std::numeric_limits<int64_t>::max()}) {
      return InvalidArgument(
          fmt::format("synthetic model: context_length: '{}' is not a token count", value));
    }
    s.context_length = static_cast<int64_t>(*tokens);
  } else if (key == "sliding_window") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.sliding_window));
  } else if (key == "rope_theta") {
    KV_RETURN_IF_ERROR(ParseFloat(key, value, &s.rope_theta));
  } else if (key == "rms_eps") {
    KV_RETURN_IF_ERROR(ParseFloat(key, value, &s.rms_eps));
  } else if (key == "weight_type") {
    Result<GgmlType> type = GgmlTypeFromName(value);
    if (!type.ok() || !IsEncodableWeightType(*type)) {
      return InvalidArgument(fmt::format("synthetic model: weight_type: '{}' is not one of {}",
                                         value, kWeightTypeNames));
    }
    s.weight_type = *type;
  } else if (key == "tied_output") {
    KV_RETURN_IF_ERROR(ParseBool(key, value, &s.tied_output));
  } else if (key == "seed") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.seed));
  } else if (key == "rope_freqs") {
    KV_RETURN_IF_ERROR(ParseBool(key, value, &s.rope_freqs));
  } else if (key == "attn_softcap") {
    KV_RETURN_IF_ERROR(ParseFloat(key, value, &s.attn_softcap));
  } else if (key == "final_softcap") {
    KV_RETURN_IF_ERROR(ParseFloat(key, value, &s.final_softcap));
  } else {
    return InvalidArgument(fmt::format("synthetic model: unknown key '{}' (known: {})", key,
                                       fmt::join(SyntheticSpecKeys(), ", ")));
  }
  *spec = std::move(s);
  return Status::Ok();
}

Status ApplySyntheticOverrides(std::string_view overrides, SyntheticModelSpec* spec) {
  while (!overrides.empty()) {
    size_t comma = overrides.find(',');
    std::string_view item = Trim(overrides.substr(0, comma));
    overrides = comma == std::string_view::npos ? std::string_view() : overrides.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(
          fmt::format("synthetic model: override '{}' is not of the form key=value", item));
    }
    KV_RETURN_IF_ERROR(
        ApplySyntheticOverride(Trim(item.substr(0, eq)), Trim(item.substr(eq + 1)), spec));
  }
  return spec->Validate();
}

Result<SyntheticModelSpec> ParseSyntheticSpec(std::string_view text) {
  size_t colon = text.find(':');
  KV_ASSIGN_OR_RETURN(SyntheticModelSpec spec, FindSyntheticPreset(Trim(text.substr(0, colon))));
  std::string_view overrides =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  KV_RETURN_IF_ERROR(ApplySyntheticOverrides(overrides, &spec));
  return spec;
}

std::string SyntheticSpecString(const SyntheticModelSpec& s) {
  // fmt's "{}" prints the shortest text that reads back to the same float.
  return fmt::format(
      "name={},architecture={},n_layers={},n_embd={},n_heads={},n_kv_heads={},head_dim={},"
      "n_ff={},n_vocab={},context_length={},sliding_window={},rope_theta={},rms_eps={},"
      "weight_type={},tied_output={},seed={},rope_freqs={},attn_softcap={},final_softcap={}",
      s.name, s.architecture, s.n_layers, s.n_embd, s.n_heads, s.n_kv_heads, s.HeadDim(), s.n_ff,
      s.n_vocab, s.context_length, s.sliding_window, s.rope_theta, s.rms_eps,
      GgmlTypeName(s.weight_type), s.tied_output ? "true" : "false", s.seed,
      s.rope_freqs ? "true" : "false", s.attn_softcap, s.final_softcap);
}

std::string SyntheticSpecHash(const SyntheticModelSpec& spec) {
  Sha256 h;
  h.UpdateU64(kSyntheticGeneratorVersion);
  h.Update(SyntheticSpecString(spec));
  return HexOf(h.Finish()).substr(0, 12);
}

int64_t SyntheticModelParams(const SyntheticModelSpec& s) {
  const int64_t embd = s.n_embd;
  const int64_t q_dim = int64_t{s.n_heads} * s.HeadDim();
  const int64_t kv_dim = int64_t{s.n_kv_heads} * s.HeadDim();
  const bool gemma = IsGemma(s.architecture);
  const int64_t per_layer =
      2 * embd                                                // attn_norm, ffn_norm
      + embd * (q_dim + 2 * kv_dim)                           // attn_q, attn_k, attn_v
      + q_dim * embd                                          // attn_output
      + 3 * embd * s.n_ff                                     // ffn_gate, ffn_up, ffn_down
      + (s.architecture == "qwen2" ? q_dim + 2 * kv_dim : 0)  // attn_q/k/v.bias
      + (gemma ? 2 * embd : 0)                                // post_attention/ffw_norm
      + (s.architecture == "gemma3" ? 2 * s.HeadDim() : 0);   // attn_q/k_norm
  const int64_t vocab = int64_t{s.n_vocab} * embd * (s.tied_output ? 1 : 2);
  const int64_t rope = s.rope_freqs ? s.HeadDim() / 2 : 0;
  return vocab + embd + rope + per_layer * s.n_layers;
}

}  // namespace kvengine
