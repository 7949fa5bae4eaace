// From a model to its KV groups: which layers share a block table, in which dtype each layer's K
// and V are stored, and the window each group slides.
#pragma once

#include <string>
#include <vector>

#include "kvengine/status.h"
#include "kv/group_spec.h"
#include "model/model_config.h"

namespace kvengine {

// Per-layer KV dtypes: a default plus overrides. Mixed precision is data, not a flag.
struct KvDtypeMap {
  LayerKvDtypes default_dtypes;
  std::vector<std::pair<int, LayerKvDtypes>> overrides;  // (layer, dtypes), later ones win.

  LayerKvDtypes ForLayer(int layer) const;
  bool uniform() const { return overrides.empty() && default_dtypes.k == default_dtypes.v; }
  std::string Describe() const;  // "int8" or "f16 (K) / int8 (V), 2 layer overrides".
};

KvDtypeMap UniformDtypes(KvDtype dtype);

// Parses a KV dtype map (--kv-dtype-map) JSON document:
//   {"default": "int8",                        // or {"k": "f16", "v": "int8"}
//    "layers": {"0": "f16", "30-31": {"k": "f16", "v": "int4"}}}
// Layer keys are single indices or inclusive ranges "a-b"; no layer may be named twice
// (overlapping ranges are an error). Errors name the offending field.
Result<KvDtypeMap> ParseKvDtypeMap(const std::string& json_text, int n_layers);

struct KvGroupOptions {
  // StreamingLLM for full-attention models (opt-in): window > 0 turns every full layer into a
  // window of this many tokens that also keeps the first `sink_tokens` tokens.
  int streaming_window = 0;
  int sink_tokens = 0;
};

// Groups layers by attention kind: full, sliding window (one group per window size), MLA.
Result<std::vector<KvGroupSpec>> BuildKvGroups(const ModelConfig& model, const KvDtypeMap& dtypes,
                                               const KvGroupOptions& options = {});

}  // namespace kvengine
