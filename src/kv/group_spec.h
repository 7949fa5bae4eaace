// What one KV group stores: the layers that share a block table, and the shape and number format
// of each layer's K and V rows. A model's layers fall into groups by attention kind (full,
// sliding window W, MLA latent); see docs/kv-cache.md.
#pragma once

#include <string>
#include <vector>

#include "quant/kv_dtype.h"

namespace kvengine {

enum class KvGroupKind {
  kFull,           // Every past token stays visible.
  kSlidingWindow,  // Each query sees the last `window` tokens (itself included) plus sinks.
  kMla,            // One latent row per token per layer (K and V are read from it).
};

const char* KvGroupKindName(KvGroupKind kind);

struct LayerKvDtypes {
  KvDtype k = KvDtype::kF16;
  KvDtype v = KvDtype::kF16;
};

struct KvGroupSpec {
  KvGroupKind kind = KvGroupKind::kFull;
  std::vector<int> layers;  // Model layer indices stored in this group, ascending.
  int num_kv_heads = 0;     // Rows per token per layer; 1 for MLA.
  int head_dim_k = 0;       // Elements of a K row; for MLA the latent (kv_lora_rank + rope dims).
  int head_dim_v = 0;       // Elements of a V row; 0 for MLA (no separate V).
  int window = 0;           // kSlidingWindow only: tokens each query attends to, >= 1.
  int sink_tokens = 0;      // kSlidingWindow only: first tokens never released (StreamingLLM).
  std::vector<LayerKvDtypes> dtypes;  // [layers.size()]: K/V dtype of each layer of the group.

  bool windowed() const { return kind == KvGroupKind::kSlidingWindow; }
  // "full(32 layers, 8x128)", "window 4096(+4 sinks)", "mla(576)".
  std::string Describe() const;
};

}  // namespace kvengine
