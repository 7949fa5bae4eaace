// The architectures the runtime runs: each reads its GGUF metadata (and small tensors such as
// rope_freqs) into DecoderHParams; LoadModel (model_registry.cc) then loads the weights its
// DecoderArch calls for and runs them through the one forward pass (decoder_model.h).
// Key names and conventions follow llama.cpp's converter and loader.
#pragma once

#include <string>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "model/decoder_weights.h"

namespace kvengine {

// llama / mistral (llama_arch.cc): Llama 2, TinyLlama, Mistral (`attention.sliding_window` on
// every layer) and Llama-3 / 3.1 (GQA; `rope_freqs.weight` [n_rot / 2] F32 frequency factors
// when present). Normal RoPE ordering; attn_q/k/v biases when the file has them.
Result<DecoderHParams> ReadLlamaHParams(const GgufFile& file, std::string name);

// qwen2 (qwen2_arch.cc): Qwen2 / Qwen2.5. As llama with NeoX RoPE and required attn_q/k/v biases.
Result<DecoderHParams> ReadQwen2HParams(const GgufFile& file, std::string name);

// gemma2 (gemma2_arch.cc): sliding window (`attention.sliding_window`, default 4096) on even
// layers, attention and final logit soft-capping (`attn_logit_softcapping`, default 50;
// `final_logit_softcapping`, default 30), post-attention / post-FFN norms, embeddings times
// sqrt(n_embd), GeGLU, NeoX RoPE, tied output. Norm weights are used as stored: llama.cpp's
// converter already added gemma's +1.
Result<DecoderHParams> ReadGemma2HParams(const GgufFile& file, std::string name);

// gemma3 (gemma3_arch.cc): as gemma2 without attention soft-capping, with per-head q/k RMSNorm
// (attn_q_norm / attn_k_norm), five windowed layers per global one (layer i global when
// (i + 1) % 6 == 0), RoPE base 10000 unscaled on windowed layers and `rope.freq_base` (1e6) with
// `rope.scaling` on global ones; final soft-capping only when the file sets it.
Result<DecoderHParams> ReadGemma3HParams(const GgufFile& file, std::string name);

// Gemma's attention scale (llama.cpp's f_attention_scale, from gemma_pytorch's
// query_pre_attn_scalar): 1 / sqrt(head_dim), except the 27B models (gemma2 46 layers, gemma3 62)
// whose scalar is n_embd / n_heads.
float GemmaAttentionScale(const ModelConfig& shape);

// What gemma2 and gemma3 share (gemma2_arch.cc): embeddings times sqrt(n_embd), NeoX RoPE, post
// norms, GeGLU, GemmaAttentionScale, and `final_logit_softcapping` (the fallback when absent).
Result<DecoderHParams> ReadGemmaCommon(const GgufFile& file, std::string name,
                                       double final_softcap_fallback);

}  // namespace kvengine
