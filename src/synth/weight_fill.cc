#include "synth/weight_fill.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "quant/weight_encode.h"

namespace kvengine {
namespace {

// Elements generated and encoded per sink write: 256 KiB of floats, a whole number of every
// encodable type's blocks (32 elements, 256 for the K-quants). A tensor's rows are whole blocks
// (Validate), so chunks never split a block.
constexpr int64_t kChunkElements = int64_t{1} << 16;
constexpr int64_t kLargestBlock = 256;  // QK_K.
static_assert(kChunkElements % kLargestBlock == 0 && kLargestBlock % kQ8_0BlockElements == 0);

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function: a bijective mix with full avalanche.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t SynthTensorKey(uint64_t seed, std::string_view tensor_name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the name ...
  for (char c : tensor_name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return Mix64(Mix64(seed + kGolden) ^ h);  // ... mixed with the seed.
}

void FillUniform(uint64_t key, uint64_t first, float scale, std::span<float> out) {
  // 24 random bits -> u in [0, 1) exactly representable; value = (2u - 1) * scale.
  const float mul = 2.0f * scale * 0x1p-24f;
  for (size_t j = 0; j < out.size(); ++j) {
    const uint64_t r = Mix64(key + (first + j) * kGolden);
    out[j] = static_cast<float>(r >> 40) * mul - scale;
  }
}

float SynthMatrixScale(int64_t fan_in) {
  KV_CHECK(fan_in > 0);
  return 0.5f * std::sqrt(3.0f / static_cast<float>(fan_in));
}

void SynthProgress::Add(uint64_t bytes, bool force) {
  done += bytes;
  if (callback && (force || done - last_reported >= kSynthProgressStep)) {
    last_reported = done;
    callback(done, total);
  }
}

GgufTensorFiller UniformFiller(GgmlType type, int64_t n_elements, uint64_t key, float scale,
                               SynthProgress* progress) {
  return [=](GgufSink& sink) -> Status {
    const int64_t chunk = std::min(n_elements, kChunkElements);
    std::vector<float> values(static_cast<size_t>(chunk));  // [chunk] f32, reused.
    std::vector<uint8_t> bytes(EncodedWeightBytes(type, static_cast<uint64_t>(chunk)));
    for (int64_t first = 0; first < n_elements; first += chunk) {
      const size_t n = static_cast<size_t>(std::min(chunk, n_elements - first));
      std::span<float> v(values.data(), n);
      std::span<uint8_t> b(bytes.data(), EncodedWeightBytes(type, n));
      FillUniform(key, static_cast<uint64_t>(first), scale, v);
      EncodeWeights(type, v, b);
      KV_RETURN_IF_ERROR(sink.Write(b));
      if (progress != nullptr) progress->Add(b.size(), first + chunk >= n_elements);
    }
    return Status::Ok();
  };
}

GgufTensorFiller ConstantF32Filler(int64_t n_elements, float value, SynthProgress* progress) {
  return [=](GgufSink& sink) -> Status {
    const std::vector<float> values(static_cast<size_t>(n_elements), value);  // [n] f32.
    std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(values.data()),
                               values.size() * sizeof(float));
    KV_RETURN_IF_ERROR(sink.Write(b));
    if (progress != nullptr) progress->Add(b.size(), true);
    return Status::Ok();
  };
}

}  // namespace kvengine
