// ModelConfig from a GGUF file's metadata (`{arch}.block_count`, `{arch}.attention.*`, ...), and
// the model fingerprint that keys the prefix cache.
#pragma once

#include <string>

#include "kvengine/status.h"
#include "gguf/gguf_reader.h"
#include "model/model_config.h"

namespace kvengine {

// Reads the KV-relevant hyper-parameters. Missing optional keys take llama.cpp's defaults
// (key/value length = n_embd / n_heads, KV heads = heads); wrong types and absurd values are
// errors naming the key.
Result<ModelConfig> ModelConfigFromGguf(const GgufFile& file, std::string name);

// SHA-256 of the file's header (metadata and tensor table) as hex: it changes whenever the
// weights' layout, tokenizer or hyper-parameters do, and costs no pass over the weights.
std::string GgufFingerprint(const GgufFile& file);

}  // namespace kvengine
