// llama / mistral / Llama-3 (architectures.h).
#include <cmath>

#include "model/architectures.h"

namespace kvengine {

Result<DecoderHParams> ReadLlamaHParams(const GgufFile& f, std::string name) {
  KV_ASSIGN_OR_RETURN(DecoderHParams hp, ReadDecoderHParams(f, std::move(name)));
  // Llama-3.1's "llama3" RoPE scaling is converted into per-pair frequency factors, one tensor
  // for the whole model (llama.cpp reads it for every layer).
  if (f.FindTensor("rope_freqs.weight") != nullptr) {
    const int half = hp.arch.rope.params.n_rot / 2;
    KV_ASSIGN_OR_RETURN(hp.arch.rope.freq_factors, LoadVector(f, "rope_freqs.weight", half));
    for (float factor : hp.arch.rope.freq_factors) {
      if (!(factor > 0) || !std::isfinite(factor)) {
        return Corrupt("tensor 'rope_freqs.weight' holds a factor that is not positive");
      }
    }
  }
  // llama.cpp's llama graph adds q/k/v biases when the file has them (some fine-tunes do).
  hp.arch.qkv_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
  return hp;
}

}  // namespace kvengine
