#include "model/presets.h"

namespace kvengine {
namespace {

ModelConfig Dense(const char* name, const char* arch, int layers, int hidden, int heads,
                  int kv_heads, int head_dim, int64_t ctx) {
  ModelConfig c;
  c.name = name;
  c.architecture = arch;
  c.n_layers = layers;
  c.n_embd = hidden;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim_k = c.head_dim_v = head_dim;
  c.context_length = ctx;
  return c;
}

ModelConfig Mla(const char* name, int layers, int hidden, int heads, int64_t ctx) {
  // DeepSeek-V2/V3: kv_lora_rank 512, qk_rope_head_dim 64 -> 576 cached elements per token per
  // layer, whatever the config's num_key_value_heads says (it counts heads after up-projection).
  ModelConfig c = Dense(name, "deepseek2", layers, hidden, heads, heads, 192, ctx);
  c.kv_lora_rank = 512;
  c.rope_dim = 64;
  return c;
}

std::vector<ModelConfig> MakePresets() {
  std::vector<ModelConfig> p;
  // meta-llama/Llama-2-7b-hf
  p.push_back(Dense("llama-2-7b", "llama", 32, 4096, 32, 32, 128, 4096));
  // meta-llama/Meta-Llama-3-8B: GQA with 8 KV heads.
  p.push_back(Dense("llama-3-8b", "llama", 32, 4096, 32, 8, 128, 8192));
  // mistralai/Mistral-7B-v0.1: GQA 8, sliding window 4096 on every layer.
  ModelConfig mistral = Dense("mistral-7b", "llama", 32, 4096, 32, 8, 128, 32768);
  mistral.sliding_window = 4096;
  p.push_back(mistral);
  // Qwen/Qwen2.5-7B: 28 layers, GQA 4 KV heads (use_sliding_window is false).
  p.push_back(Dense("qwen2.5-7b", "qwen2", 28, 3584, 28, 4, 128, 32768));
  // deepseek-ai/deepseek-llm-7b-base: multi-head attention, 30 layers.
  p.push_back(Dense("deepseek-llm-7b", "llama", 30, 4096, 32, 32, 128, 4096));
  // deepseek-ai/DeepSeek-V2-Lite and DeepSeek-V3: MLA.
  p.push_back(Mla("deepseek-v2-lite", 27, 2048, 16, 163840));
  p.push_back(Mla("deepseek-v3", 61, 7168, 128, 163840));
  // google/gemma-2-9b: sliding window 4096 on every other layer, head_dim 256.
  ModelConfig gemma2 = Dense("gemma-2-9b", "gemma2", 42, 3584, 16, 8, 256, 8192);
  gemma2.sliding_window = 4096;
  gemma2.window_pattern = 2;
  p.push_back(gemma2);
  // google/gemma-3-12b-pt: five local (window 1024) layers per global layer.
  ModelConfig gemma3 = Dense("gemma-3-12b", "gemma3", 48, 3840, 16, 8, 256, 131072);
  gemma3.sliding_window = 1024;
  gemma3.window_pattern = 6;
  p.push_back(gemma3);
  return p;
}

const std::vector<ModelConfig>& Presets() {
  static const std::vector<ModelConfig> presets = MakePresets();
  return presets;
}

}  // namespace

Result<ModelConfig> FindPreset(std::string_view name) {
  for (const ModelConfig& c : Presets()) {
    if (c.name == name) return c;
  }
  std::string known;
  for (const ModelConfig& c : Presets()) known += (known.empty() ? "" : ", ") + c.name;
  return NotFound("no model preset named '" + std::string(name) + "' (presets: " + known +
                  "; or give a .gguf path)");
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const ModelConfig& c : Presets()) names.push_back(c.name);
  return names;
}

}  // namespace kvengine
