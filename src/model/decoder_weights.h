// The hyper-parameters and weights of a decoder-only model (decoder_arch.h), read from GGUF:
// weights are views into the file's mapping, checked for names, shapes and supported types at
// load; small vectors (norms, biases) are decoded to f32 once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "kernels/matmul.h"
#include "quant/weight_view.h"
#include "model/decoder_arch.h"
#include "model/model_config.h"

namespace kvengine {

struct DecoderHParams {
  ModelConfig shape;  // Layers, heads, dims, window, context.
  int64_t n_ff = 0;
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  DecoderArch arch;
};

struct DecoderLayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  WeightView wq, wk, wv, wo;          // [rows = out][cols = in]
  std::vector<float> bq, bk, bv;      // [q_dim], [k_dim], [v_dim] when arch.qkv_bias.
  std::vector<float> q_norm, k_norm;  // [head_dim_k] when arch.qk_norm.
  std::vector<float> post_attn_norm;  // [n_embd] when arch.post_norms.
  std::vector<float> ffn_norm;        // [n_embd]
  WeightView w_gate, w_up, w_down;
  std::vector<float> post_ffn_norm;  // [n_embd] when arch.post_norms.
};

struct DecoderWeights {
  WeightView tok_embd;             // [n_vocab][n_embd]
  std::vector<float> output_norm;  // [n_embd]
  WeightView output;               // [n_vocab][n_embd]; tok_embd when tied.
  std::vector<DecoderLayerWeights> layers;
};

// The part every architecture shares: ModelConfig, `{arch}.feed_forward_length`, the vocabulary
// (token_embd rows), `attention.layer_norm_rms_epsilon` (default 1e-5), `rope.freq_base` (10000),
// `rope.dimension_count` (head_dim) and linear `rope.scaling`. RoPE ordering is normal; the
// architecture's reader changes what differs.
Result<DecoderHParams> ReadDecoderHParams(const GgufFile& file, std::string name);

// A float key, or `fallback` when absent; a present key of the wrong type is an error.
Result<double> FloatKeyOr(const GgufFile& file, const std::string& key, double fallback);

// A 1-D tensor of n elements decoded to f32 (any supported weight type).
Result<std::vector<float>> LoadVector(const GgufFile& file, const std::string& name, int64_t n);

// Every tensor hp.arch calls for; names as llama.cpp's (blk.N.attn_q.weight, ...).
Result<DecoderWeights> LoadDecoderWeights(const GgufFile& file, const DecoderHParams& hp);

}  // namespace kvengine
