#include "model/llama_weights.h"

#include <string>

#include "gguf/gguf_types.h"
#include "model_config/gguf_config.h"

namespace kvengine {
namespace {

std::string Dims(const GgufTensor& t) {
  std::string s = "[";
  for (uint32_t i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

// A 2-D weight with ggml shape [cols, rows] (ne0 = cols, contiguous).
Result<WeightView> Matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensor* t = f.FindTensor(name);
  if (t == nullptr) return NotFound("model has no tensor '" + name + "'");
  if (t->n_dims != 2 || t->dims[0] != cols || t->dims[1] != rows) {
    return Corrupt("tensor '" + name + "' has shape " + Dims(*t) + ", expected [" +
                   std::to_string(cols) + ", " + std::to_string(rows) + "]");
  }
  Status supported = CheckMatMulType(t->type);
  if (!supported.ok()) return InvalidArgument("tensor '" + name + "': " + supported.message());
  KV_ASSIGN_OR_RETURN(uint64_t row_bytes, GgmlRowBytes(t->type, uint64_t(cols)));
  return WeightView{t->type, rows, cols, t->data.data(), size_t(row_bytes)};
}

Result<std::vector<float>> Vector(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensor* t = f.FindTensor(name);
  if (t == nullptr) return NotFound("model has no tensor '" + name + "'");
  if (t->n_dims != 1 || t->dims[0] != n) {
    return Corrupt("tensor '" + name + "' has shape " + Dims(*t) + ", expected [" +
                   std::to_string(n) + "]");
  }
  Status supported = CheckMatMulType(t->type);
  if (!supported.ok()) return InvalidArgument("tensor '" + name + "': " + supported.message());
  std::vector<float> v(static_cast<size_t>(n));
  DequantizeRow(t->type, t->data.data(), n, v.data());
  return v;
}

Result<double> FloatKey(const GgufFile& f, const std::string& key, double fallback) {
  if (!f.Has(key)) return fallback;
  return f.GetFloat(key);
}

}  // namespace

Result<LlamaHParams> ReadLlamaHParams(const GgufFile& f, std::string name) {
  LlamaHParams hp;
  KV_ASSIGN_OR_RETURN(hp.shape, ModelConfigFromGguf(f, std::move(name)));
  const std::string a = hp.shape.architecture + ".";
  KV_ASSIGN_OR_RETURN(hp.n_ff, f.GetInt(a + "feed_forward_length"));
  const GgufTensor* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound("model has no tensor 'token_embd.weight'");
  hp.n_vocab = embd->n_dims == 2 ? embd->dims[1] : 0;
  KV_ASSIGN_OR_RETURN(double eps, FloatKey(f, a + "attention.layer_norm_rms_epsilon", 1e-5));
  KV_ASSIGN_OR_RETURN(double theta, FloatKey(f, a + "rope.freq_base", 10000.0));
  hp.rms_eps = float(eps);
  hp.rope_theta = float(theta);
  hp.n_rot = hp.shape.head_dim_k;
  if (f.Has(a + "rope.dimension_count")) {
    KV_ASSIGN_OR_RETURN(int64_t n_rot, f.GetInt(a + "rope.dimension_count"));
    hp.n_rot = int(n_rot);
  }
  // Linear RoPE scaling ("position interpolation"): positions are divided by the factor.
  if (f.Has(a + "rope.scaling.type")) {
    KV_ASSIGN_OR_RETURN(std::string_view type, f.GetString(a + "rope.scaling.type"));
    if (type == "linear") {
      KV_ASSIGN_OR_RETURN(double factor, FloatKey(f, a + "rope.scaling.factor", 1.0));
      if (factor > 0) hp.rope_freq_scale = float(1.0 / factor);
    } else if (type != "none") {
      return InvalidArgument("RoPE scaling type '" + std::string(type) + "' is not supported");
    }
  }
  if (hp.n_ff < 1 || hp.n_ff > (1 << 20) || hp.n_vocab < 1 || hp.n_vocab > (1 << 22)) {
    return Corrupt("model has an implausible feed-forward size or vocabulary");
  }
  if (hp.n_rot < 0 || hp.n_rot > hp.shape.head_dim_k || hp.n_rot % 2 != 0) {
    return Corrupt("rope.dimension_count " + std::to_string(hp.n_rot) + " does not fit head_dim " +
                   std::to_string(hp.shape.head_dim_k));
  }
  if (hp.shape.is_mla()) return InvalidArgument("MLA models are not supported by the llama runtime");
  return hp;
}

Result<LlamaWeights> LoadLlamaWeights(const GgufFile& f, const LlamaHParams& hp) {
  const ModelConfig& c = hp.shape;
  const int64_t e = c.n_embd;
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim_k;
  const int64_t k_dim = int64_t(c.n_kv_heads) * c.head_dim_k;
  const int64_t v_dim = int64_t(c.n_kv_heads) * c.head_dim_v;
  LlamaWeights w;
  KV_ASSIGN_OR_RETURN(w.tok_embd, Matrix(f, "token_embd.weight", hp.n_vocab, e));
  KV_ASSIGN_OR_RETURN(w.output_norm, Vector(f, "output_norm.weight", e));
  if (f.FindTensor("output.weight") != nullptr) {
    KV_ASSIGN_OR_RETURN(w.output, Matrix(f, "output.weight", hp.n_vocab, e));
  } else {
    w.output = w.tok_embd;  // Tied embeddings.
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayerWeights L;
    KV_ASSIGN_OR_RETURN(L.attn_norm, Vector(f, p + "attn_norm.weight", e));
    KV_ASSIGN_OR_RETURN(L.wq, Matrix(f, p + "attn_q.weight", q_dim, e));
    KV_ASSIGN_OR_RETURN(L.wk, Matrix(f, p + "attn_k.weight", k_dim, e));
    KV_ASSIGN_OR_RETURN(L.wv, Matrix(f, p + "attn_v.weight", v_dim, e));
    KV_ASSIGN_OR_RETURN(L.wo, Matrix(f, p + "attn_output.weight", e, int64_t(c.n_heads) * c.head_dim_v));
    KV_ASSIGN_OR_RETURN(L.ffn_norm, Vector(f, p + "ffn_norm.weight", e));
    KV_ASSIGN_OR_RETURN(L.w_gate, Matrix(f, p + "ffn_gate.weight", hp.n_ff, e));
    KV_ASSIGN_OR_RETURN(L.w_up, Matrix(f, p + "ffn_up.weight", hp.n_ff, e));
    KV_ASSIGN_OR_RETURN(L.w_down, Matrix(f, p + "ffn_down.weight", e, hp.n_ff));
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace kvengine
