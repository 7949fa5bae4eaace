// DecoderArch: what differs between the decoder-only transformer architectures the runtime runs
// (llama / mistral / Llama-3, qwen2, gemma2, gemma3), as data. One forward pass
// (decoder_model.cc) reads it; each architecture's file (llama_arch.cc, qwen2_arch.cc,
// gemma2_arch.cc, gemma3_arch.cc) only reads its GGUF metadata into one of these.
//
// The layer every architecture shares, with the optional steps in brackets:
//   x = token_embd[token] [* embd_scale]
//   per layer l:
//     h = RmsNorm(x, attn_norm)
//     q, k, v = Wq h [+ bq], Wk h [+ bk], Wv h [+ bv]
//     [q, k = per-head RmsNorm(q, attn_q_norm), RmsNorm(k, attn_k_norm)]
//     q, k = RoPE(q, k, pos, the layer's rope: rope, or rope_local on windowed layers)
//     a = softmax_j([softcap](attn_scale * q.k_j)) . v   (over the layer's visible positions)
//     a = Wo a [; a = RmsNorm(a, post_attention_norm)]
//     x = x + a
//     h = RmsNorm(x, ffn_norm)
//     f = W_down (act(W_gate h) * (W_up h))       act = SiLU (SwiGLU) or GELU-tanh (GeGLU)
//     [f = RmsNorm(f, post_ffw_norm)]
//     x = x + f
//   logits = W_out RmsNorm(x, output_norm) [then softcap]
// where softcap_c(s) = c * tanh(s / c).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/rope.h"

namespace kvengine {

enum class FfnActivation {
  kSilu,      // SwiGLU: silu(gate) * up (llama, mistral, qwen2).
  kGeluTanh,  // GeGLU: gelu_tanh(gate) * up (gemma2, gemma3), gelu with the tanh approximation.
};

// RoPE of one kind of layer, plus optional per-pair frequency factors (Llama-3's rope_freqs):
// pair i turns by pos * freq_scale * theta^(-2i / n_rot) / freq_factors[i].
struct LayerRope {
  RopeParams params;
  std::vector<float> freq_factors;  // [n_rot / 2], each > 0; empty = all 1.
};

struct DecoderArch {
  // Input embedding multiplier; 0 = none (gemma: sqrt(n_embd)).
  float embd_scale = 0.0f;

  // Attention.
  bool qkv_bias = false;      // blk.N.attn_{q,k,v}.bias are added after the projections (qwen2).
  bool qk_norm = false;       // blk.N.attn_{q,k}_norm.weight [head_dim]: per-head RMSNorm (gemma3).
  float attn_scale = 0.0f;    // Multiplies q.k; 0 = 1 / sqrt(head_dim_k).
  float attn_softcap = 0.0f;  // > 0: scores s become c * tanh(s / c) before the softmax (gemma2).
  LayerRope rope;             // Full-attention layers (and windowed ones when !has_local_rope).
  bool has_local_rope = false;
  LayerRope rope_local;  // Windowed layers when has_local_rope (gemma3: base 10000, no scaling).

  // Layer structure.
  bool post_norms = false;  // blk.N.post_attention_norm / post_ffw_norm (gemma2, gemma3).
  FfnActivation ffn_act = FfnActivation::kSilu;

  // Output.
  float final_softcap = 0.0f;  // > 0: logits l become c * tanh(l / c) (gemma2).

  const LayerRope& RopeOf(bool windowed) const {
    return windowed && has_local_rope ? rope_local : rope;
  }
};

}  // namespace kvengine
