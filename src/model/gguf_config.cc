#include "model/gguf_config.h"

#include <algorithm>
#include <limits>

#include "base/sha256.h"

namespace kvengine {
namespace {

// An integer key that may be absent (-> fallback) but must be in [lo, hi] when present.
Result<int64_t> IntKey(const GgufFile& f, const std::string& key, int64_t fallback, int64_t lo,
                       int64_t hi) {
  if (!f.Has(key)) return fallback;
  Result<int64_t> r = f.GetInt(key);
  if (!r.ok()) {
    // Some writers store per-layer arrays (e.g. head_count_kv); take the largest entry.
    Result<std::vector<int64_t>> arr = f.GetIntArray(key);
    if (!arr.ok() || arr->empty()) return InvalidArgument("GGUF key '" + key + "': " + r.status().message());
    r = *std::max_element(arr->begin(), arr->end());
  }
  if (*r < lo || *r > hi) {
    return OutOfRange("GGUF key '" + key + "' = " + std::to_string(*r) + " is outside [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return r;
}

}  // namespace

Result<ModelConfig> ModelConfigFromGguf(const GgufFile& f, std::string name) {
  ModelConfig c;
  c.name = std::move(name);
  KV_ASSIGN_OR_RETURN(std::string_view arch, f.Architecture());
  c.architecture = std::string(arch);
  const std::string a = c.architecture + ".";
  constexpr int64_t kMaxDim = 1 << 20;
  KV_ASSIGN_OR_RETURN(int64_t layers, IntKey(f, a + "block_count", -1, 1, 4096));
  KV_ASSIGN_OR_RETURN(int64_t embd, IntKey(f, a + "embedding_length", -1, 1, kMaxDim));
  KV_ASSIGN_OR_RETURN(int64_t heads, IntKey(f, a + "attention.head_count", -1, 1, 65536));
  KV_ASSIGN_OR_RETURN(int64_t kv_heads, IntKey(f, a + "attention.head_count_kv", heads, 1, heads));
  KV_ASSIGN_OR_RETURN(int64_t k_len, IntKey(f, a + "attention.key_length", embd / heads, 1, kMaxDim));
  KV_ASSIGN_OR_RETURN(int64_t v_len, IntKey(f, a + "attention.value_length", k_len, 1, kMaxDim));
  KV_ASSIGN_OR_RETURN(int64_t ctx, IntKey(f, a + "context_length", 2048, 1, int64_t{1} << 32));
  // gemma2 files written before the key existed mean Gemma 2's 4096 (llama.cpp's default).
  const int64_t default_window = c.architecture == "gemma2" ? 4096 : 0;
  KV_ASSIGN_OR_RETURN(int64_t window, IntKey(f, a + "attention.sliding_window", default_window, 0,
                                             std::numeric_limits<int>::max()));
  KV_ASSIGN_OR_RETURN(int64_t lora, IntKey(f, a + "attention.kv_lora_rank", 0, 0, kMaxDim));
  KV_ASSIGN_OR_RETURN(int64_t rope, IntKey(f, a + "rope.dimension_count", 0, 0, kMaxDim));
  c.n_layers = int(layers);
  c.n_embd = int(embd);
  c.n_heads = int(heads);
  c.n_kv_heads = int(kv_heads);
  c.head_dim_k = int(k_len);
  c.head_dim_v = int(v_len);
  c.context_length = ctx;
  c.sliding_window = int(window);
  c.window_pattern = WindowPatternOf(c.architecture);
  if (c.architecture == "deepseek2" && lora > 0) {
    c.kv_lora_rank = int(lora);
    c.rope_dim = int(rope);
  }
  KV_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::string GgufFingerprint(const GgufFile& f) {
  const auto header = f.bytes().first(std::min<size_t>(f.data_offset(), f.bytes().size()));
  Sha256 h;
  h.Update(header.data(), header.size());
  return HexOf(h.Finish());
}

}  // namespace kvengine
