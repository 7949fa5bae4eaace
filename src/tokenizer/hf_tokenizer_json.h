// Test utility: turns a Hugging Face tokenizer.json with a BPE model (GPT-2, Llama-3, Qwen)
// into the GGUF tokenizer metadata of a "gpt2" vocabulary, as llama.cpp's convert_hf_to_gguf.py
// does, written with the project's GgufWriter. Used by the npm reference test; not part of the
// runtime.
//
// Mapping:
//   tokens      id -> text for model.vocab and added_tokens; ids missing from both become
//               "[PAD<id>]" with type unused (5).
//   token_type  model.vocab entries normal (1); added tokens control (3) when "special" or when
//               they look special ("<|...|>", as the converter decides), else user-defined (4).
//   merges      model.merges, each a "left right" string or a [left, right] pair (tokenizers
//               >= 0.20 writes pairs), written as "left right".
//   pre, bos/eos ids and add_bos/add_eos from the options.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kvengine/status.h"
#include "gguf/gguf_writer.h"

namespace kvengine::tokenizer_test {

struct HfToGgufOptions {
  std::string pre;        // tokenizer.ggml.pre: "llama-bpe", "qwen2", "gpt2".
  std::string bos_token;  // Token text; empty: no bos_token_id key.
  std::string eos_token;  // Token text; empty: no eos_token_id key.
  bool add_bos = false;
  bool add_eos = false;
};

// Adds tokenizer.ggml.{model,pre,tokens,token_type,merges,bos_token_id,eos_token_id,
// add_bos_token,add_eos_token} for `tokenizer_json` to `writer`.
Status AddHfTokenizerMetadata(const nlohmann::json& tokenizer_json, const HfToGgufOptions& options,
                              GgufWriter& writer);

}  // namespace kvengine::tokenizer_test
