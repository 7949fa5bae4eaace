// Test helpers: synthetic llama-style vocabularies written as GGUF metadata, the shared models
// directory, and the golden file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace kvengine::tokenizer_test {

struct VocabSpec {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // tokenizer.ggml.token_type values.
};

// The layout of llama vocabularies: 0 <unk>, 1 <s>, 2 </s>, then (with_bytes) 256 byte tokens
// <0x00>..<0xFF>, then `pieces` (text, score) in order.
VocabSpec LlamaStyleVocab(const std::vector<std::pair<std::string, float>>& pieces,
                          bool with_bytes = true);

// A writer holding tokenizer.ggml.model = "llama", tokens, scores, token_type, and bos 1, eos 2,
// unknown 0. Callers may add more keys before writing.
GgufWriter WriterFor(const VocabSpec& spec);

// Writes and reopens; fails the test (returning nullptr) on error.
std::unique_ptr<GgufFile> ToFile(const GgufWriter& writer);

// ../shared/models beside the source tree, or $KVENGINE_MODELS_DIR.
std::string ModelsDir();
// True when tests must not skip for missing models ($CI == "true").
bool ModelsRequired();

}  // namespace kvengine::tokenizer_test
