// qwen2 (architectures.h).
#include "model/architectures.h"

namespace kvengine {

Result<DecoderHParams> ReadQwen2HParams(const GgufFile& f, std::string name) {
  KV_ASSIGN_OR_RETURN(DecoderHParams hp, ReadDecoderHParams(f, std::move(name)));
  hp.arch.rope.params.neox = true;  // llama.cpp: LLAMA_ROPE_TYPE_NEOX for qwen2.
  hp.arch.qkv_bias = true;          // Required: a qwen2 file without them is incomplete.
  return hp;
}

}  // namespace kvengine
