#include "synth/synthetic_spec.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/sha256.h"
#include "base/size_parse.h"

namespace kvengine {
namespace {

// Bounds that keep every product in SyntheticModelParams and the file size inside 64 bits
// (layers x 4 x 2^40 elements x 4 bytes < 2^63) and match ModelConfigFromGguf's limits.
constexpr int kMaxLayers = 4096;
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int kMaxVocab = 1 << 21;
constexpr size_t kMaxNameBytes = 64;
constexpr uint32_t kQ8BlockSize = 32;

bool IsSupportedWeightType(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16 || t == GgmlType::kQ8_0;
}

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
  if (!IsSupportedWeightType(weight_type)) {
    return InvalidArgument(
        fmt::format("synthetic model: weight_type {} is not supported (f32, f16, bf16, q8_0)",
                    GgmlTypeName(weight_type)));
  }
  if (weight_type == GgmlType::kQ8_0) {
    // Rows (dims[0]) of quantized matrices are n_embd, n_ff or n_heads * head_dim long.
    const int64_t q_dim = int64_t{n_heads} * HeadDim();
    if (n_embd % kQ8BlockSize != 0 || n_ff % kQ8BlockSize != 0 || q_dim % kQ8BlockSize != 0) {
      return InvalidArgument(fmt::format(
          "synthetic model: q8_0 needs n_embd ({}), n_ff ({}) and n_heads * head_dim ({}) to be "
          "multiples of 32",
          n_embd, n_ff, q_dim));
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
  return NotFound(fmt::format("unknown synthetic model preset '{}' (known: {})", name,
                              fmt::join(SyntheticPresetNames(), ", ")));
}

std::vector<std::string> SyntheticPresetNames() {
  return {"tiny", "small", "llama-1b", "mistral-tiny", "mistral-small"};
}

std::vector<std::string> SyntheticSpecKeys() {
  return {"name",    "architecture",   "n_layers",       "n_embd",
          "n_heads", "n_kv_heads",     "head_dim",       "n_ff",
          "n_vocab", "context_length", "sliding_window", "rope_theta",
          "rms_eps", "weight_type",    "tied_output",    "seed"};
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
    if (!type.ok() || !IsSupportedWeightType(*type)) {
      return InvalidArgument(fmt::format(
          "synthetic model: weight_type: '{}' is not one of f32, f16, bf16, q8_0", value));
    }
    s.weight_type = *type;
  } else if (key == "tied_output") {
    KV_RETURN_IF_ERROR(ParseBool(key, value, &s.tied_output));
  } else if (key == "seed") {
    KV_RETURN_IF_ERROR(ParseInt(key, value, &s.seed));
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
      "weight_type={},tied_output={},seed={}",
      s.name, s.architecture, s.n_layers, s.n_embd, s.n_heads, s.n_kv_heads, s.HeadDim(), s.n_ff,
      s.n_vocab, s.context_length, s.sliding_window, s.rope_theta, s.rms_eps,
      GgmlTypeName(s.weight_type), s.tied_output ? "true" : "false", s.seed);
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
  const int64_t per_layer = 2 * embd                       // attn_norm, ffn_norm
                            + embd * (q_dim + 2 * kv_dim)  // attn_q, attn_k, attn_v
                            + q_dim * embd                 // attn_output
                            + 3 * embd * s.n_ff;           // ffn_gate, ffn_up, ffn_down
  const int64_t vocab = int64_t{s.n_vocab} * embd * (s.tied_output ? 1 : 2);
  return vocab + embd + per_layer * s.n_layers;
}

}  // namespace kvengine
