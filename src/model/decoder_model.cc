#include "model/decoder_model.h"

#include <cmath>
#include <vector>

#include "kernels/attention/kv_layer_view.h"
#include "kernels/attention/paged_attention.h"
#include "kernels/rope.h"
#include "kernels/vector_ops.h"
#include "model/llamacpp_numerics.h"
#include "model/softcap_attention.h"

namespace kvengine {
namespace {

// Owner: immutable after loading; Forward may run on any one thread at a time per KV manager.
class DecoderModel final : public Model {
 public:
  DecoderModel(std::shared_ptr<const GgufFile> file, DecoderHParams hp, DecoderWeights w,
               DecoderOptions options)
      : file_(std::move(file)), hp_(std::move(hp)), w_(std::move(w)), options_(options) {}

  const ModelConfig& config() const override { return hp_.shape; }
  int64_t n_vocab() const override { return hp_.n_vocab; }

  Status Forward(std::span<const SeqChunk> chunks, KvCacheManager& kv, ThreadPool& pool,
                 ForwardOutput* out) const override;

 private:
  // One row per token of the batch.
  struct TokenRef {
    SeqId seq;
    int64_t pos;
    int32_t token;
  };

  // A step's activations, token-major (N tokens): x [N][E] (the residual stream), xn and tmp
  // [N][E], q [N][H*D], k [N][Hkv*D], v [N][Hkv*Dv], att [N][H*Dv], g/u [N][F]; the RoPE tables
  // cs [N][n_rot] for full layers and cs_local for windowed ones; the attention queries.
  struct Activations {
    size_t tokens = 0;  // N
    std::vector<float> x, xn, tmp, q, k, v, att, g, u;
    std::vector<float> cs, cs_local;
    std::vector<AttentionQuery> queries;
  };

  // The batch's tokens in chunk order, after checking that each has a KV slot and is in the
  // vocabulary.
  Status GatherTokens(std::span<const SeqChunk> chunks, const KvCacheManager& kv,
                      std::vector<TokenRef>* toks) const;
  // The activations sized for the tokens, x their (scaled) embeddings and the RoPE tables filled.
  Activations Embed(const std::vector<TokenRef>& toks) const;
  // Layer l's attention block: x += the attention output (its K and V rows written to the cache).
  void AttentionBlock(int l, const std::vector<TokenRef>& toks, KvCacheManager& kv,
                      ThreadPool& pool, Activations& a) const;
  // Layer l's feed-forward block: x += the FFN output.
  void FfnBlock(int l, ThreadPool& pool, Activations& a) const;
  // The final norm and output projection of the rows that want logits, into out.
  void Logits(std::span<const SeqChunk> chunks, Activations& a, ThreadPool& pool,
              ForwardOutput* out) const;

  std::shared_ptr<const GgufFile> file_;  // Owns the mapping the weight views point into.
  DecoderHParams hp_;
  DecoderWeights w_;
  DecoderOptions options_;
};

// Adds bias [n] to each of `rows` rows of x [rows][n].
void AddBias(float* x, const std::vector<float>& bias, size_t rows) {
  const size_t n = bias.size();
  for (size_t r = 0; r < rows; ++r) AddInPlace(x + r * n, bias.data(), int64_t(n));
}

Status DecoderModel::GatherTokens(std::span<const SeqChunk> chunks, const KvCacheManager& kv,
                                  std::vector<TokenRef>* toks) const {
  for (const SeqChunk& ch : chunks) {
    if (ch.start_pos + int64_t(ch.tokens.size()) > kv.NumTokens(ch.seq)) {
      return InvalidArgument("chunk of sequence " + std::to_string(ch.seq) +
                             " has no KV slots appended");
    }
    for (size_t i = 0; i < ch.tokens.size(); ++i) {
      const int32_t t = ch.tokens[i];
      if (t < 0 || t >= hp_.n_vocab) {
        return InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary (" +
                               std::to_string(hp_.n_vocab) + ")");
      }
      toks->push_back({ch.seq, ch.start_pos + int64_t(i), t});
    }
  }
  return Status::Ok();
}

DecoderModel::Activations DecoderModel::Embed(const std::vector<TokenRef>& toks) const {
  const ModelConfig& c = hp_.shape;
  const DecoderArch& arch = hp_.arch;
  const size_t E = size_t(c.n_embd), H = size_t(c.n_heads), Hkv = size_t(c.n_kv_heads);
  const size_t D = size_t(c.head_dim_k), Dv = size_t(c.head_dim_v), F = size_t(hp_.n_ff);
  const size_t N = toks.size();
  Activations a;
  a.tokens = N;
  a.x.resize(N * E);
  a.xn.resize(N * E);
  a.tmp.resize(N * E);
  a.q.resize(N * H * D);
  a.k.resize(N * Hkv * D);
  a.v.resize(N * Hkv * Dv);
  a.att.resize(N * H * Dv);
  a.g.resize(N * F);
  a.u.resize(N * F);
  for (size_t i = 0; i < N; ++i) {
    DequantizeWeightRow(w_.tok_embd, toks[i].token, a.x.data() + i * E);
    if (arch.embd_scale > 0) {
      for (size_t e = 0; e < E; ++e) a.x[i * E + e] *= arch.embd_scale;
    }
  }
  // RoPE tables, once per step.
  const int n_rot = arch.rope.params.n_rot;
  const int n_rot_local = arch.has_local_rope ? arch.rope_local.params.n_rot : 0;
  a.cs.resize(N * size_t(n_rot));
  a.cs_local.resize(N * size_t(n_rot_local));
  const bool llamacpp = options_.numerics == ForwardNumerics::kLlamaCppCpu;
  const auto cos_sin = llamacpp ? &LlamaCppRopeCosSin : &LayerRopeCosSin;
  for (size_t i = 0; i < N; ++i) {
    cos_sin(toks[i].pos, arch.rope, a.cs.data() + i * size_t(n_rot));
    if (arch.has_local_rope) {
      cos_sin(toks[i].pos, arch.rope_local, a.cs_local.data() + i * size_t(n_rot_local));
    }
  }
  a.queries.resize(N);
  return a;
}

void DecoderModel::AttentionBlock(int l, const std::vector<TokenRef>& toks, KvCacheManager& kv,
                                  ThreadPool& pool, Activations& a) const {
  const ModelConfig& c = hp_.shape;
  const DecoderArch& arch = hp_.arch;
  const size_t E = size_t(c.n_embd), H = size_t(c.n_heads), Hkv = size_t(c.n_kv_heads);
  const size_t D = size_t(c.head_dim_k), Dv = size_t(c.head_dim_v);
  const size_t N = a.tokens;
  const int64_t n = int64_t(N);
  const DecoderLayerWeights& L = w_.layers[size_t(l)];
  const bool local = arch.has_local_rope && c.LayerWindowed(l);
  const RopeParams& rope = local ? arch.rope_local.params : arch.rope.params;
  const float* cs_l = local ? a.cs_local.data() : a.cs.data();
  for (size_t i = 0; i < N; ++i) {
    RmsNorm(a.x.data() + i * E, L.attn_norm.data(), int64_t(E), hp_.rms_eps, a.xn.data() + i * E);
  }
  // Q, K and V (and below gate and up) read the same activations: one pass over the pool.
  const WeightView* qkv[] = {&L.wq, &L.wk, &L.wv};
  float* const qkv_out[] = {a.q.data(), a.k.data(), a.v.data()};
  MatMulMulti(qkv, a.xn.data(), n, qkv_out, &pool);
  if (arch.qkv_bias) {
    AddBias(a.q.data(), L.bq, N);
    AddBias(a.k.data(), L.bk, N);
    AddBias(a.v.data(), L.bv, N);
  }
  if (arch.qk_norm) {  // Per head: q [N*H][D], k [N*Hkv][D].
    for (size_t r = 0; r < N * H; ++r) {
      RmsNorm(a.q.data() + r * D, L.q_norm.data(), int64_t(D), hp_.rms_eps, a.q.data() + r * D);
    }
    for (size_t r = 0; r < N * Hkv; ++r) {
      RmsNorm(a.k.data() + r * D, L.k_norm.data(), int64_t(D), hp_.rms_eps, a.k.data() + r * D);
    }
  }
  for (size_t i = 0; i < N; ++i) {
    const float* cs_i = cs_l + i * size_t(rope.n_rot);
    RopeApply(a.q.data() + i * H * D, int(H), int(D), cs_i, rope);
    RopeApply(a.k.data() + i * Hkv * D, int(Hkv), int(D), cs_i, rope);
    kv.WriteKv(toks[i].seq, l, toks[i].pos, a.k.data() + i * Hkv * D, a.v.data() + i * Hkv * Dv);
  }
  // Every token's K/V of this layer is in the cache: attend, reading blocks in place.
  const KvLayerView view = LayerViewOf(kv, l);
  const int group = kv.GroupOfLayer(l);
  for (size_t i = 0; i < N; ++i) {
    a.queries[i] = {kv.BlockTable(toks[i].seq, group), a.q.data() + i * H * D, toks[i].pos,
                    a.att.data() + i * H * Dv};
  }
  const float scale = arch.attn_scale > 0 ? arch.attn_scale : 1.0f / std::sqrt(float(D));
  if (options_.numerics == ForwardNumerics::kLlamaCppCpu) {
    LlamaCppFlashAttentionBatch(view, a.queries, int(H), scale, arch.attn_softcap, &pool);
  } else if (arch.attn_softcap > 0) {
    SoftCappedAttentionBatch(view, a.queries, int(H), scale, arch.attn_softcap, &pool);
  } else {
    PagedAttentionBatch(view, a.queries, int(H), scale, &pool);
  }
  MatMul(L.wo, a.att.data(), n, a.tmp.data(), &pool);
  if (arch.post_norms) {
    for (size_t i = 0; i < N; ++i) {
      RmsNorm(a.tmp.data() + i * E, L.post_attn_norm.data(), int64_t(E), hp_.rms_eps,
              a.tmp.data() + i * E);
    }
  }
  AddInPlace(a.x.data(), a.tmp.data(), int64_t(N * E));
}

void DecoderModel::FfnBlock(int l, ThreadPool& pool, Activations& a) const {
  const DecoderArch& arch = hp_.arch;
  const size_t E = size_t(hp_.shape.n_embd), F = size_t(hp_.n_ff);
  const size_t N = a.tokens;
  const int64_t n = int64_t(N);
  const DecoderLayerWeights& L = w_.layers[size_t(l)];
  for (size_t i = 0; i < N; ++i) {
    RmsNorm(a.x.data() + i * E, L.ffn_norm.data(), int64_t(E), hp_.rms_eps, a.xn.data() + i * E);
  }
  const WeightView* gate_up[] = {&L.w_gate, &L.w_up};
  float* const gate_up_out[] = {a.g.data(), a.u.data()};
  MatMulMulti(gate_up, a.xn.data(), n, gate_up_out, &pool);
  switch (arch.ffn_act) {
    case FfnActivation::kSilu:
      SwiGlu(a.g.data(), a.u.data(), int64_t(N * F), a.g.data());
      break;
    case FfnActivation::kGeluTanh:
      GeGlu(a.g.data(), a.u.data(), int64_t(N * F), a.g.data());
      break;
  }
  MatMul(L.w_down, a.g.data(), n, a.tmp.data(), &pool);
  if (arch.post_norms) {
    for (size_t i = 0; i < N; ++i) {
      RmsNorm(a.tmp.data() + i * E, L.post_ffn_norm.data(), int64_t(E), hp_.rms_eps,
              a.tmp.data() + i * E);
    }
  }
  AddInPlace(a.x.data(), a.tmp.data(), int64_t(N * E));
}

void DecoderModel::Logits(std::span<const SeqChunk> chunks, Activations& a, ThreadPool& pool,
                          ForwardOutput* out) const {
  const size_t E = size_t(hp_.shape.n_embd);
  out->n_vocab = hp_.n_vocab;
  out->first_row.clear();
  std::vector<size_t> rows;
  size_t base = 0;
  for (const SeqChunk& ch : chunks) {
    out->first_row.push_back(int64_t(rows.size()));
    if (ch.all_logits) {
      for (size_t i = 0; i < ch.tokens.size(); ++i) rows.push_back(base + i);
    } else if (!ch.tokens.empty()) {
      rows.push_back(base + ch.tokens.size() - 1);
    }
    base += ch.tokens.size();
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    RmsNorm(a.x.data() + rows[r] * E, w_.output_norm.data(), int64_t(E), hp_.rms_eps,
            a.xn.data() + r * E);
  }
  out->logits.resize(rows.size() * size_t(hp_.n_vocab));
  MatMul(w_.output, a.xn.data(), int64_t(rows.size()), out->logits.data(), &pool);
  if (hp_.arch.final_softcap > 0) {
    SoftCap(out->logits.data(), int64_t(out->logits.size()), hp_.arch.final_softcap);
  }
}

Status DecoderModel::Forward(std::span<const SeqChunk> chunks, KvCacheManager& kv, ThreadPool& pool,
                             ForwardOutput* out) const {
  std::vector<TokenRef> toks;
  KV_RETURN_IF_ERROR(GatherTokens(chunks, kv, &toks));
  Activations a = Embed(toks);
  for (int l = 0; l < hp_.shape.n_layers; ++l) {
    AttentionBlock(l, toks, kv, pool, a);
    FfnBlock(l, pool, a);
  }
  Logits(chunks, a, pool, out);
  return Status::Ok();
}

}  // namespace

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float gelu = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
    out[i] = gelu * up[i];
  }
}

void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void LayerRopeCosSin(int64_t pos, const LayerRope& rope, float* cos_sin) {
  const RopeParams& p = rope.params;
  if (rope.freq_factors.empty()) {
    RopeCosSin(pos, p, cos_sin);
    return;
  }
  // As RopeCosSin, each pair's frequency divided by its factor (llama.cpp's rope freq_factors).
  const int half = p.n_rot / 2;
  const double scaled_pos = static_cast<double>(pos) * static_cast<double>(p.freq_scale);
  for (int i = 0; i < half; ++i) {
    const double inv_freq =
        std::pow(static_cast<double>(p.theta), -2.0 * i / static_cast<double>(p.n_rot)) /
        static_cast<double>(rope.freq_factors[size_t(i)]);
    const double angle = scaled_pos * inv_freq;
    cos_sin[i] = static_cast<float>(std::cos(angle));
    cos_sin[half + i] = static_cast<float>(std::sin(angle));
  }
}

Result<std::unique_ptr<Model>> LoadDecoderModel(std::shared_ptr<const GgufFile> file,
                                                DecoderHParams hp, DecoderOptions options) {
  if (!hp.arch.rope.freq_factors.empty() &&
      int(hp.arch.rope.freq_factors.size()) != hp.arch.rope.params.n_rot / 2) {
    return Corrupt("RoPE frequency factors do not match rope.dimension_count");
  }
  KV_ASSIGN_OR_RETURN(DecoderWeights w, LoadDecoderWeights(*file, hp));
  return std::unique_ptr<Model>(
      new DecoderModel(std::move(file), std::move(hp), std::move(w), options));
}

}  // namespace kvengine
