#include "model/kv_groups.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <vector>

namespace kvengine {

LayerKvDtypes KvDtypeMap::ForLayer(int layer) const {
  LayerKvDtypes d = default_dtypes;
  for (const auto& [l, o] : overrides) {
    if (l == layer) d = o;
  }
  return d;
}

std::string KvDtypeMap::Describe() const {
  std::string s(KvDtypeName(default_dtypes.k));
  if (default_dtypes.v != default_dtypes.k) {
    s += " (K) / " + std::string(KvDtypeName(default_dtypes.v)) + " (V)";
  }
  if (!overrides.empty()) s += ", " + std::to_string(overrides.size()) + " layer overrides";
  return s;
}

KvDtypeMap UniformDtypes(KvDtype dtype) { return KvDtypeMap{{dtype, dtype}, {}}; }

namespace {

using nlohmann::json;

Result<LayerKvDtypes> ParseEntry(const json& j, const std::string& where) {
  if (j.is_string()) {
    KV_ASSIGN_OR_RETURN(KvDtype d, ParseKvDtype(j.get<std::string>()));
    return LayerKvDtypes{d, d};
  }
  if (!j.is_object()) return InvalidArgument(where + ": expected a dtype name or {\"k\", \"v\"}");
  LayerKvDtypes out;
  for (const auto& [key, val] : j.items()) {
    if ((key != "k" && key != "v") || !val.is_string()) {
      return InvalidArgument(where + ": unexpected field '" + key + "' (use \"k\" and \"v\")");
    }
    Result<KvDtype> d = ParseKvDtype(val.get<std::string>());
    if (!d.ok()) return InvalidArgument(where + "." + key + ": " + d.status().message());
    (key == "k" ? out.k : out.v) = *d;
  }
  if (!j.contains("k") || !j.contains("v")) return InvalidArgument(where + ": needs both k and v");
  return out;
}

bool ParseInt(std::string_view s, int* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

}  // namespace

Result<KvDtypeMap> ParseKvDtypeMap(const std::string& json_text, int n_layers) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("KV plan is not a JSON object");
  }
  KvDtypeMap map;
  std::vector<std::string> set_by(size_t(std::max(n_layers, 0)));  // [layer] the range naming it.
  for (const auto& [key, val] : doc.items()) {
    if (key == "default") {
      KV_ASSIGN_OR_RETURN(map.default_dtypes, ParseEntry(val, "KV plan 'default'"));
    } else if (key == "layers") {
      if (!val.is_object()) return InvalidArgument("KV plan 'layers' must be an object");
      for (const auto& [range, entry] : val.items()) {
        const std::string where = "KV plan layers['" + range + "']";
        int lo = 0, hi = 0;
        const size_t dash = range.find('-');
        const bool ok = dash == std::string::npos
                            ? ParseInt(range, &lo) && (hi = lo, true)
                            : ParseInt(std::string_view(range).substr(0, dash), &lo) &&
                                  ParseInt(std::string_view(range).substr(dash + 1), &hi);
        if (!ok || lo < 0 || hi < lo || hi >= n_layers) {
          return InvalidArgument(where + ": not a layer or range within 0.." +
                                 std::to_string(n_layers - 1));
        }
        KV_ASSIGN_OR_RETURN(LayerKvDtypes d, ParseEntry(entry, where));
        for (int l = lo; l <= hi; ++l) {
          if (!set_by[size_t(l)].empty()) {
            return InvalidArgument(where + ": layer " + std::to_string(l) + " is also in layers['" +
                                   set_by[size_t(l)] + "'] (ranges must not overlap)");
          }
          set_by[size_t(l)] = range;
          map.overrides.emplace_back(l, d);
        }
      }
    } else {
      return InvalidArgument("KV plan: unknown field '" + key + "' (use \"default\", \"layers\")");
    }
  }
  return map;
}

Result<std::vector<KvGroupSpec>> BuildKvGroups(const ModelConfig& model, const KvDtypeMap& dtypes,
                                               const KvGroupOptions& options) {
  KV_RETURN_IF_ERROR(model.Validate());
  if (options.streaming_window < 0 || options.sink_tokens < 0) {
    return InvalidArgument("streaming window and sink tokens must be >= 0");
  }
  if (options.sink_tokens > 0 && options.streaming_window == 0) {
    return InvalidArgument("attention sinks need a streaming window");
  }
  // Key: (kind, window). Groups come out in a stable order: full/MLA first, then by window.
  std::map<std::pair<int, int>, KvGroupSpec> groups;
  for (int l = 0; l < model.n_layers; ++l) {
    KvGroupSpec proto;
    proto.num_kv_heads = model.n_kv_heads;
    proto.head_dim_k = model.head_dim_k;
    proto.head_dim_v = model.head_dim_v;
    if (model.is_mla()) {
      proto.kind = KvGroupKind::kMla;
      proto.num_kv_heads = 1;
      proto.head_dim_k = model.kv_lora_rank + model.rope_dim;
      proto.head_dim_v = 0;
    } else if (model.LayerWindowed(l)) {
      proto.kind = KvGroupKind::kSlidingWindow;
      proto.window = model.sliding_window;
    } else if (options.streaming_window > 0) {
      proto.kind = KvGroupKind::kSlidingWindow;
      proto.window = options.streaming_window;
      proto.sink_tokens = options.sink_tokens;
    }
    auto [it, inserted] = groups.try_emplace({int(proto.kind), proto.window}, proto);
    it->second.layers.push_back(l);
    LayerKvDtypes d = dtypes.ForLayer(l);
    if (proto.kind == KvGroupKind::kMla) d.v = d.k;  // The latent is one row: K's dtype rules.
    it->second.dtypes.push_back(d);
  }
  std::vector<KvGroupSpec> out;
  for (auto& [key, spec] : groups) out.push_back(std::move(spec));
  return out;
}

}  // namespace kvengine
