// gemma3 (architectures.h).
#include "model/architectures.h"

namespace kvengine {

Result<DecoderHParams> ReadGemma3HParams(const GgufFile& f, std::string name) {
  // Gemma 3 dropped attention soft-capping; a final cap only when the file sets one.
  KV_ASSIGN_OR_RETURN(DecoderHParams hp, ReadGemmaCommon(f, std::move(name), 0.0));
  hp.arch.qk_norm = true;
  if (hp.shape.sliding_window > 0) {
    // Local layers: RoPE base 10000 without scaling (llama.cpp's rope_freq_base_train_swa);
    // global layers keep rope.freq_base (1e6) and rope.scaling (linear 8 from 4B up).
    hp.arch.has_local_rope = true;
    hp.arch.rope_local.params = hp.arch.rope.params;
    hp.arch.rope_local.params.theta = 10000.0f;
    hp.arch.rope_local.params.freq_scale = 1.0f;
  }
  return hp;
}

}  // namespace kvengine
