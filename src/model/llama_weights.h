// The weights of a llama-architecture model (Llama 2, TinyLlama, TinyStories, Mistral), as views
// into the GGUF mapping, checked for names, shapes and supported types at load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_reader.h"
#include "kernels/matmul.h"
#include "kernels/weight_view.h"
#include "model_config/model_config.h"

namespace kvengine {

struct LlamaHParams {
  ModelConfig shape;      // Layers, heads, dims, window, context.
  int64_t n_ff = 0;
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  int n_rot = 0;          // Rotated dims per head.
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;  // Linear RoPE scaling: positions are multiplied by this.
  bool rope_neox = false;
};

struct LlamaLayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  WeightView wq, wk, wv, wo;     // [rows = out][cols = in]
  std::vector<float> ffn_norm;   // [n_embd]
  WeightView w_gate, w_up, w_down;
};

struct LlamaWeights {
  WeightView tok_embd;            // [n_vocab][n_embd]
  std::vector<float> output_norm;  // [n_embd]
  WeightView output;              // [n_vocab][n_embd]; tok_embd when tied.
  std::vector<LlamaLayerWeights> layers;
};

Result<LlamaHParams> ReadLlamaHParams(const GgufFile& file, std::string name);
Result<LlamaWeights> LoadLlamaWeights(const GgufFile& file, const LlamaHParams& hp);

}  // namespace kvengine
