// Model: a loaded transformer that runs a forward pass over the paged KV cache.
//
// Adding an architecture is adding a file: each architecture reads its metadata into a DecoderArch
// (architectures.h, decoder_arch.h) and registers that reader in model_registry.cc, keyed by GGUF
// `general.architecture`; they all run DecoderModel's forward pass.
//
// Threading: Forward runs on the engine thread and fans work out to the ThreadPool it was given;
// a Model is immutable after loading, so several engines may share one (shared_ptr<const>).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "kv/kv_cache_manager.h"
#include "model/model_config.h"

namespace kvengine {

// Tokens of one sequence to run in this step: positions start_pos .. start_pos + size - 1. Their
// KV slots must already be appended in the KvCacheManager; Forward writes their K/V, and the
// caller then calls MarkComputed.
struct SeqChunk {
  SeqId seq = 0;
  int64_t start_pos = 0;
  std::span<const int32_t> tokens;
  bool all_logits = false;  // Logits for every token (teacher forcing), else only the last.
};

struct ForwardOutput {
  int64_t n_vocab = 0;
  std::vector<float> logits;         // [rows][n_vocab]
  std::vector<int64_t> first_row;    // [chunk] first logits row of each chunk.
  const float* Row(size_t chunk, int64_t i = 0) const {
    return logits.data() + size_t(first_row[chunk] + i) * size_t(n_vocab);
  }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual int64_t n_vocab() const = 0;
  // Runs every chunk; chunks of different sequences and lengths mix freely. A token's logits do
  // not depend on the rest of the batch or on how its sequence was chunked (batch invariance).
  virtual Status Forward(std::span<const SeqChunk> chunks, KvCacheManager& kv, ThreadPool& pool,
                         ForwardOutput* out) const = 0;
};

// Loads the architecture named by the file's `general.architecture`. The file must outlive the
// model (weights are views into its mapping).
Result<std::unique_ptr<Model>> LoadModel(std::shared_ptr<const GgufFile> file, std::string name);

// The `general.architecture` values LoadModel accepts.
std::vector<std::string> SupportedArchitectures();

}  // namespace kvengine
