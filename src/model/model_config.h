// ModelConfig: the hyper-parameters of a transformer that decide its KV cache (and, from the
// runtime on, its forward pass). Filled from a built-in preset or from a GGUF file's metadata.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"

namespace kvengine {

struct ModelConfig {
  std::string name;          // Preset name or file name.
  std::string architecture;  // "llama", "mistral", "qwen2", "deepseek2", "gemma2", ...
  int n_layers = 0;
  int n_embd = 0;            // Hidden size.
  int n_heads = 0;           // Query heads.
  int n_kv_heads = 0;        // KV heads (GQA/MQA when < n_heads).
  int head_dim_k = 0;        // Elements per K row (key_length).
  int head_dim_v = 0;        // Elements per V row (value_length).
  int64_t context_length = 0;  // The model's trained context.
  // Sliding window attention: 0 = none. Layer i is windowed when window_pattern == 1 (all
  // layers, Mistral) or (i + 1) % window_pattern != 0 (Gemma-2: 2, Gemma-3: 6).
  int sliding_window = 0;
  int window_pattern = 1;
  // MLA (DeepSeek-V2/V3): the cache holds kv_lora_rank + rope_dim elements per token per layer.
  int kv_lora_rank = 0;
  int rope_dim = 0;

  bool is_mla() const { return kv_lora_rank > 0; }
  bool LayerWindowed(int layer) const {
    if (sliding_window <= 0) return false;
    return window_pattern <= 1 || (layer + 1) % window_pattern != 0;
  }
  // KV bytes of one token by the naive formula 2 x layers x hidden x bytes(dtype), for
  // comparison with the exact figure (which accounts for GQA, MLA, windows, scales, blocks).
  double NaiveBytesPerToken(double bytes_per_element) const {
    return 2.0 * n_layers * n_embd * bytes_per_element;
  }
  Status Validate() const;
};

// The window_pattern an architecture implies (llama.cpp's swa pattern): gemma2 2 (even layers
// windowed), gemma3 6 (layer i global when (i + 1) % 6 == 0), every other architecture 1.
int WindowPatternOf(std::string_view architecture);

}  // namespace kvengine
