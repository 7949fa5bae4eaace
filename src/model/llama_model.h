// The llama architecture (Llama 2, TinyLlama, TinyStories, Mistral-style sliding window):
// RMSNorm, RoPE, GQA attention over the paged KV cache, SwiGLU feed-forward, tied or separate
// output.
#pragma once

#include <memory>

#include "model/llama_weights.h"
#include "model/model.h"

namespace kvengine {

Result<std::unique_ptr<Model>> LoadLlamaModel(std::shared_ptr<const GgufFile> file,
                                              std::string name);

}  // namespace kvengine
