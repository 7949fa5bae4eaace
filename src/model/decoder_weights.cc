#include "model/decoder_weights.h"

#include <cmath>
#include <string>

#include "gguf/gguf_types.h"
#include "model/gguf_config.h"

namespace kvengine {
namespace {

std::string Dims(const GgufTensor& t) {
  std::string s = "[";
  for (uint32_t i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

// A 2-D weight with ggml shape [cols, rows] (ne0 = cols, contiguous), in the layout the file's
// copy holds it in (GgufTensor::column_block: ggml rows, or column blocks that the loader asked
// for; CheckWeightView refuses blocks the kernels cannot read).
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
  WeightView w{t->type, rows, cols, t->data.data(), size_t(row_bytes), t->column_block};
  Status shape = CheckWeightView(w);
  if (!shape.ok()) return InvalidArgument("tensor '" + name + "': " + shape.message());
  return w;
}

}  // namespace

Result<double> FloatKeyOr(const GgufFile& f, const std::string& key, double fallback) {
  if (!f.Has(key)) return fallback;
  return f.GetFloat(key);
}

Result<std::vector<float>> LoadVector(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensor* t = f.FindTensor(name);
  if (t == nullptr) return NotFound("model has no tensor '" + name + "'");
  if (t->n_dims != 1 || t->dims[0] != n) {
    return Corrupt("tensor '" + name + "' has shape " + Dims(*t) + ", expected [" +
                   std::to_string(n) + "]");
  }
  Status supported = CheckMatMulType(t->type);
  if (!supported.ok()) return InvalidArgument("tensor '" + name + "': " + supported.message());
  if (n % GetGgmlTypeTraits(t->type).block_size != 0) {
    return Corrupt("tensor '" + name + "': " + std::to_string(n) +
                   " elements are not a whole number of " + GgmlTypeName(t->type) + " blocks");
  }
  std::vector<float> v(static_cast<size_t>(n));
  DequantizeRow(t->type, t->data.data(), n, v.data());
  for (float x : v) {
    if (!std::isfinite(x)) return Corrupt("tensor '" + name + "' holds a non-finite value");
  }
  return v;
}

Result<DecoderHParams> ReadDecoderHParams(const GgufFile& f, std::string name) {
  DecoderHParams hp;
  KV_ASSIGN_OR_RETURN(hp.shape, ModelConfigFromGguf(f, std::move(name)));
  if (hp.shape.is_mla()) return InvalidArgument("MLA models are not supported by the runtime yet");
  const std::string a = hp.shape.architecture + ".";
  KV_ASSIGN_OR_RETURN(hp.n_ff, f.GetInt(a + "feed_forward_length"));
  const GgufTensor* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound("model has no tensor 'token_embd.weight'");
  hp.n_vocab = embd->n_dims == 2 ? embd->dims[1] : 0;
  KV_ASSIGN_OR_RETURN(double eps, FloatKeyOr(f, a + "attention.layer_norm_rms_epsilon", 1e-5));
  KV_ASSIGN_OR_RETURN(double theta, FloatKeyOr(f, a + "rope.freq_base", 10000.0));
  if (!(eps > 0 && eps < 1) || !(theta > 0 && std::isfinite(theta))) {
    return Corrupt("model has an implausible RMS epsilon or RoPE base");
  }
  hp.rms_eps = float(eps);
  RopeParams& rope = hp.arch.rope.params;
  rope.theta = float(theta);
  rope.n_rot = hp.shape.head_dim_k;
  if (f.Has(a + "rope.dimension_count")) {
    KV_ASSIGN_OR_RETURN(int64_t n_rot, f.GetInt(a + "rope.dimension_count"));
    if (n_rot < 0 || n_rot > hp.shape.head_dim_k) n_rot = -1;  // Rejected below.
    rope.n_rot = int(n_rot);
  }
  // Linear RoPE scaling ("position interpolation"): positions are divided by the factor.
  if (f.Has(a + "rope.scaling.type")) {
    KV_ASSIGN_OR_RETURN(std::string_view type, f.GetString(a + "rope.scaling.type"));
    if (type == "linear") {
      KV_ASSIGN_OR_RETURN(double factor, FloatKeyOr(f, a + "rope.scaling.factor", 1.0));
      if (factor > 0) rope.freq_scale = float(1.0 / factor);
    } else if (type != "none") {
      return InvalidArgument("RoPE scaling type '" + std::string(type) + "' is not supported");
    }
  }
  if (hp.n_ff < 1 || hp.n_ff > (1 << 20) || hp.n_vocab < 1 || hp.n_vocab > (1 << 22)) {
    return Corrupt("model has an implausible feed-forward size or vocabulary");
  }
  if (rope.n_rot < 2 || rope.n_rot > hp.shape.head_dim_k || rope.n_rot % 2 != 0 ||
      rope.n_rot > kMaxRopeDims) {
    return Corrupt("rope.dimension_count " + std::to_string(rope.n_rot) +
                   " does not fit head_dim " + std::to_string(hp.shape.head_dim_k));
  }
  return hp;
}

Result<DecoderWeights> LoadDecoderWeights(const GgufFile& f, const DecoderHParams& hp) {
  const ModelConfig& c = hp.shape;
  const DecoderArch& arch = hp.arch;
  const int64_t e = c.n_embd;
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim_k;
  const int64_t k_dim = int64_t(c.n_kv_heads) * c.head_dim_k;
  const int64_t v_dim = int64_t(c.n_kv_heads) * c.head_dim_v;
  const int64_t o_dim = int64_t(c.n_heads) * c.head_dim_v;
  DecoderWeights w;
  KV_ASSIGN_OR_RETURN(w.tok_embd, Matrix(f, "token_embd.weight", hp.n_vocab, e));
  KV_ASSIGN_OR_RETURN(w.output_norm, LoadVector(f, "output_norm.weight", e));
  if (f.FindTensor("output.weight") != nullptr) {
    KV_ASSIGN_OR_RETURN(w.output, Matrix(f, "output.weight", hp.n_vocab, e));
  } else {
    w.output = w.tok_embd;  // Tied embeddings.
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    DecoderLayerWeights L;
    KV_ASSIGN_OR_RETURN(L.attn_norm, LoadVector(f, p + "attn_norm.weight", e));
    KV_ASSIGN_OR_RETURN(L.wq, Matrix(f, p + "attn_q.weight", q_dim, e));
    KV_ASSIGN_OR_RETURN(L.wk, Matrix(f, p + "attn_k.weight", k_dim, e));
    KV_ASSIGN_OR_RETURN(L.wv, Matrix(f, p + "attn_v.weight", v_dim, e));
    if (arch.qkv_bias) {
      KV_ASSIGN_OR_RETURN(L.bq, LoadVector(f, p + "attn_q.bias", q_dim));
      KV_ASSIGN_OR_RETURN(L.bk, LoadVector(f, p + "attn_k.bias", k_dim));
      KV_ASSIGN_OR_RETURN(L.bv, LoadVector(f, p + "attn_v.bias", v_dim));
    }
    if (arch.qk_norm) {
      KV_ASSIGN_OR_RETURN(L.q_norm, LoadVector(f, p + "attn_q_norm.weight", c.head_dim_k));
      KV_ASSIGN_OR_RETURN(L.k_norm, LoadVector(f, p + "attn_k_norm.weight", c.head_dim_k));
    }
    KV_ASSIGN_OR_RETURN(L.wo, Matrix(f, p + "attn_output.weight", e, o_dim));
    if (arch.post_norms) {
      KV_ASSIGN_OR_RETURN(L.post_attn_norm, LoadVector(f, p + "post_attention_norm.weight", e));
      KV_ASSIGN_OR_RETURN(L.post_ffn_norm, LoadVector(f, p + "post_ffw_norm.weight", e));
    }
    KV_ASSIGN_OR_RETURN(L.ffn_norm, LoadVector(f, p + "ffn_norm.weight", e));
    KV_ASSIGN_OR_RETURN(L.w_gate, Matrix(f, p + "ffn_gate.weight", hp.n_ff, e));
    KV_ASSIGN_OR_RETURN(L.w_up, Matrix(f, p + "ffn_up.weight", hp.n_ff, e));
    KV_ASSIGN_OR_RETURN(L.w_down, Matrix(f, p + "ffn_down.weight", e, hp.n_ff));
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace kvengine
