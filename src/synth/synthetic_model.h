// Writing a synthetic model (synthetic_spec.h) as a GGUF file that llama.cpp-style loaders
// and ModelConfigFromGguf read like a converted llama model.
//
// Metadata written, in order ({arch} = spec.architecture):
//   general.architecture, general.name (string), general.file_type (u32 llama_ftype: 0 F32,
//   1 F16, 2 Q4_0, 3 Q4_1, 7 Q8_0, 8 Q5_0, 9 Q5_1, 14 Q4_K_S, 16 Q5_K_S, 18 Q6_K, 32 BF16),
//   {arch}.vocab_size, {arch}.context_length, {arch}.embedding_length,
//   {arch}.block_count, {arch}.feed_forward_length, {arch}.attention.head_count,
//   {arch}.attention.head_count_kv, {arch}.rope.dimension_count (= head_dim) (all u32),
//   {arch}.attention.key_length and .value_length (u32, only when head_dim != n_embd / n_heads),
//   {arch}.attention.sliding_window (u32, only when > 0), {arch}.rope.freq_base (f32),
//   {arch}.attn_logit_softcapping (f32, gemma2), {arch}.final_logit_softcapping (f32, when > 0),
//   {arch}.attention.layer_norm_rms_epsilon (f32), tokenizer.ggml.model = "llama",
//   tokenizer.ggml.tokens / .scores / .token_type (synthetic_vocab.h), tokenizer.ggml.bos_token_id,
//   .eos_token_id, .unknown_token_id (u32), tokenizer.ggml.add_bos_token (true),
//   .add_eos_token (false), and kvengine.synthetic.spec (string, SyntheticSpecString) which marks
//   the file as synthetic: its weights are random and its text meaningless.
// Tensors: as listed in synthetic_spec.h, in the order token_embd, rope_freqs, blk.0.* ..
// blk.N-1.*, output_norm, output; weights from weight_fill.h, deterministic in the spec.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kvengine/status.h"
#include "gguf/gguf_writer.h"
#include "synth/synthetic_spec.h"
#include "synth/weight_fill.h"

namespace kvengine {

// The metadata key that marks a synthetic model; its value is SyntheticSpecString(spec).
inline constexpr std::string_view kSyntheticSpecKey = "kvengine.synthetic.spec";

using SyntheticProgressFn = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

// A writer holding the whole model: metadata now, tensors as fillers that generate their bytes
// when written and report them to `progress` (may be null; must outlive the writer's Write*).
// Validates the spec first.
Result<GgufWriter> BuildSyntheticWriter(const SyntheticModelSpec& spec, SynthProgress* progress);

// Writes the model to `path` (through a temporary file renamed into place, so `path` is either
// absent, the previous file, or complete). `progress` is called every few MiB and once at the
// end with bytes_done == bytes_total == the file size. Memory use is a few MiB at any size.
Status WriteSyntheticModel(const SyntheticModelSpec& spec, const std::string& path,
                           const SyntheticProgressFn& progress = {});

// The exact size of the file WriteSyntheticModel writes; 0 when the spec is invalid.
uint64_t SyntheticModelBytes(const SyntheticModelSpec& spec);

}  // namespace kvengine
