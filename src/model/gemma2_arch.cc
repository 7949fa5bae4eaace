// gemma2 (architectures.h), and what gemma3 shares with it.
#include <cmath>

#include "model/architectures.h"

namespace kvengine {
namespace {

// A soft-cap key: absent -> fallback; 0 turns the cap off; otherwise it must be positive, finite.
Result<float> SoftCapKey(const GgufFile& f, const std::string& key, double fallback) {
  KV_ASSIGN_OR_RETURN(double cap, FloatKeyOr(f, key, fallback));
  if (!(cap >= 0) || !std::isfinite(cap)) {
    return Corrupt("GGUF key '" + key + "' = " + std::to_string(cap) + " is not a valid soft cap");
  }
  return float(cap);
}

}  // namespace

float GemmaAttentionScale(const ModelConfig& c) {
  const bool is_27b = (c.architecture == "gemma2" && c.n_layers == 46) ||
                      (c.architecture == "gemma3" && c.n_layers == 62);
  const float scalar = is_27b ? float(c.n_embd / c.n_heads) : float(c.head_dim_k);
  return 1.0f / std::sqrt(scalar);
}

Result<DecoderHParams> ReadGemmaCommon(const GgufFile& f, std::string name,
                                       double final_softcap_fallback) {
  KV_ASSIGN_OR_RETURN(DecoderHParams hp, ReadDecoderHParams(f, std::move(name)));
  DecoderArch& arch = hp.arch;
  arch.embd_scale = std::sqrt(float(hp.shape.n_embd));
  arch.rope.params.neox = true;
  arch.post_norms = true;
  arch.ffn_act = FfnActivation::kGeluTanh;
  arch.attn_scale = GemmaAttentionScale(hp.shape);
  KV_ASSIGN_OR_RETURN(
      arch.final_softcap,
      SoftCapKey(f, hp.shape.architecture + ".final_logit_softcapping", final_softcap_fallback));
  return hp;
}

Result<DecoderHParams> ReadGemma2HParams(const GgufFile& f, std::string name) {
  KV_ASSIGN_OR_RETURN(DecoderHParams hp, ReadGemmaCommon(f, std::move(name), 30.0));
  KV_ASSIGN_OR_RETURN(hp.arch.attn_softcap, SoftCapKey(f, "gemma2.attn_logit_softcapping", 50.0));
  return hp;
}

}  // namespace kvengine
