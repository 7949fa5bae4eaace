// Deterministic synthetic weights, generated in streaming chunks.
//
// Element i of a tensor is a pure function of (seed, tensor name, i): a counter-based generator
// (SplitMix64's finaliser applied to key + i), so chunks can be produced in any order or in
// parallel and the bytes never depend on the chunk size. Values are uniform in [-scale, scale)
// with 24 random bits each; matrices use scale = 0.5 * sqrt(3 / fan_in) (standard deviation
// 0.5 / sqrt(fan_in)) so activations keep their size through the layers; norms are 1.
//
// Pure functions apart from the fillers' progress counter; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "gguf/gguf_types.h"
#include "gguf/gguf_writer.h"

namespace kvengine {

// The per-tensor generator key: a hash of the seed and the tensor's name.
uint64_t SynthTensorKey(uint64_t seed, std::string_view tensor_name);

// out[j] = the value of element first + j of the tensor keyed `key`, in [-scale, scale).
void FillUniform(uint64_t key, uint64_t first, float scale, std::span<float> out);

// The uniform half-width for a matrix whose rows (dims[0]) have `fan_in` elements.
float SynthMatrixScale(int64_t fan_in);

// Counts bytes produced by fillers and reports them, at most once per kSynthProgressStep bytes
// and once at the end of each tensor. Owned by the caller; outlives the writer's Write* call.
struct SynthProgress {
  uint64_t done = 0;
  uint64_t total = 0;
  uint64_t last_reported = 0;
  std::function<void(uint64_t bytes_done, uint64_t bytes_total)> callback;  // May be empty.

  void Add(uint64_t bytes, bool force);
};
inline constexpr uint64_t kSynthProgressStep = uint64_t{16} << 20;

// A filler writing n_elements uniform values (FillUniform with key and scale) encoded as `type`
// (IsEncodableWeightType; n_elements a multiple of the block size). `progress` may be null.
GgufTensorFiller UniformFiller(GgmlType type, int64_t n_elements, uint64_t key, float scale,
                               SynthProgress* progress);
// A filler writing n_elements copies of `value` as F32.
GgufTensorFiller ConstantF32Filler(int64_t n_elements, float value, SynthProgress* progress);

}  // namespace kvengine
