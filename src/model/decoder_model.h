// DecoderModel: the one forward pass of every decoder-only architecture (decoder_arch.h), over the
// paged KV cache. Architectures differ only in the DecoderArch their reader fills.
#pragma once

#include <cstdint>
#include <memory>

#include "model/decoder_weights.h"
#include "model/model.h"

namespace kvengine {

// How the forward pass rounds. The engine runs kExact. kLlamaCppCpu rounds as llama.cpp's CPU
// backend does with an f16 KV cache (llamacpp_numerics.h: RoPE angles in f32, flash attention
// with an f16 query and V accumulator), so that tests can compare logits with llama.cpp's beyond
// the f16 noise; it needs an f16 KV cache (KV_CHECK) and runs scalar attention.
enum class ForwardNumerics {
  kExact,
  kLlamaCppCpu,
};

// What the caller chooses, as opposed to what the file says (DecoderHParams).
struct DecoderOptions {
  ForwardNumerics numerics = ForwardNumerics::kExact;
};

// Loads hp's weights from `file` and builds the model; the model keeps `file` alive (its weights
// are views into the mapping).
Result<std::unique_ptr<Model>> LoadDecoderModel(std::shared_ptr<const GgufFile> file,
                                                DecoderHParams hp, DecoderOptions options = {});

// out[i] = gelu_tanh(gate[i]) * up[i], gelu_tanh(g) = g/2 * (1 + tanh(sqrt(2/pi) (g + 0.044715
// g^3))): GeGLU as gemma's gelu_pytorch_tanh. Scalar; a function of the inputs alone. out may be
// gate/up.
void GeGlu(const float* gate, const float* up, int64_t n, float* out);

// x[i] = cap * tanh(x[i] / cap), cap > 0 (logit soft-capping).
void SoftCap(float* x, int64_t n, float cap);

// cos_sin[0, n_rot / 2) = cos, [n_rot / 2, n_rot) = sin of each pair's angle at `pos` (see
// LayerRope); equal to RopeCosSin when there are no frequency factors.
void LayerRopeCosSin(int64_t pos, const LayerRope& rope, float* cos_sin);

}  // namespace kvengine
