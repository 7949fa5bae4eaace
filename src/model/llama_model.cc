#include "model/llama_model.h"

#include <cmath>
#include <vector>

#include "attention/kv_layer_view.h"
#include "attention/paged_attention.h"
#include "kernels/rope.h"
#include "kernels/vector_ops.h"

namespace kvengine {
namespace {

class LlamaModel final : public Model {
 public:
  LlamaModel(std::shared_ptr<const GgufFile> file, LlamaHParams hp, LlamaWeights w)
      : file_(std::move(file)), hp_(std::move(hp)), w_(std::move(w)) {
    rope_.n_rot = hp_.n_rot;
    rope_.theta = hp_.rope_theta;
    rope_.freq_scale = hp_.rope_freq_scale;
    rope_.neox = hp_.rope_neox;
  }

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

  std::shared_ptr<const GgufFile> file_;  // Owns the mapping the weight views point into.
  LlamaHParams hp_;
  LlamaWeights w_;
  RopeParams rope_;
};

Status LlamaModel::Forward(std::span<const SeqChunk> chunks, KvCacheManager& kv,
                           ThreadPool& pool, ForwardOutput* out) const {
  const ModelConfig& c = hp_.shape;
  std::vector<TokenRef> toks;
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
      toks.push_back({ch.seq, ch.start_pos + int64_t(i), t});
    }
  }
  const int64_t n = int64_t(toks.size());
  const size_t E = size_t(c.n_embd), H = size_t(c.n_heads), Hkv = size_t(c.n_kv_heads);
  const size_t D = size_t(c.head_dim_k), Dv = size_t(c.head_dim_v), F = size_t(hp_.n_ff);
  const size_t N = size_t(n);
  // Activations, token-major: x [n][E], q [n][H*D], k [n][Hkv*D], v [n][Hkv*Dv], att [n][H*Dv],
  // g/u [n][F].
  std::vector<float> x(N * E), xn(N * E), tmp(N * E), q(N * H * D), k(N * Hkv * D),
      v(N * Hkv * Dv), att(N * H * Dv), g(N * F), u(N * F);
  for (size_t i = 0; i < N; ++i) {
    DequantizeRow(w_.tok_embd.type, w_.tok_embd.data + size_t(toks[i].token) * w_.tok_embd.row_bytes,
                  int64_t(E), x.data() + i * E);
  }
  const float scale = 1.0f / std::sqrt(float(D));
  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& L = w_.layers[size_t(l)];
    for (size_t i = 0; i < N; ++i) {
      RmsNorm(x.data() + i * E, L.attn_norm.data(), int64_t(E), hp_.rms_eps, xn.data() + i * E);
    }
    // Q, K and V (and below gate and up) read the same activations: one pass over the pool.
    const WeightView* qkv[] = {&L.wq, &L.wk, &L.wv};
    float* const qkv_out[] = {q.data(), k.data(), v.data()};
    MatMulMulti(qkv, xn.data(), n, qkv_out, &pool);
    for (size_t i = 0; i < N; ++i) {
      Rope(q.data() + i * H * D, int(H), int(D), toks[i].pos, rope_);
      Rope(k.data() + i * Hkv * D, int(Hkv), int(D), toks[i].pos, rope_);
      kv.WriteKv(toks[i].seq, l, toks[i].pos, k.data() + i * Hkv * D, v.data() + i * Hkv * Dv);
    }
    // Every token's K/V of this layer is in the cache: attend, reading blocks in place.
    const KvLayerView view = LayerViewOf(kv, l);
    const int group = kv.GroupOfLayer(l);
    std::vector<AttentionQuery> queries(N);
    for (size_t i = 0; i < N; ++i) {
      queries[i] = {kv.BlockTable(toks[i].seq, group), q.data() + i * H * D, toks[i].pos,
                    att.data() + i * H * Dv};
    }
    PagedAttentionBatch(view, queries, int(H), scale, &pool);
    MatMul(L.wo, att.data(), n, tmp.data(), &pool);
    AddInPlace(x.data(), tmp.data(), int64_t(N * E));
    for (size_t i = 0; i < N; ++i) {
      RmsNorm(x.data() + i * E, L.ffn_norm.data(), int64_t(E), hp_.rms_eps, xn.data() + i * E);
    }
    const WeightView* gate_up[] = {&L.w_gate, &L.w_up};
    float* const gate_up_out[] = {g.data(), u.data()};
    MatMulMulti(gate_up, xn.data(), n, gate_up_out, &pool);
    SwiGlu(g.data(), u.data(), int64_t(N * F), g.data());
    MatMul(L.w_down, g.data(), n, tmp.data(), &pool);
    AddInPlace(x.data(), tmp.data(), int64_t(N * E));
  }
  // Final norm and output projection for the rows that want logits.
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
    RmsNorm(x.data() + rows[r] * E, w_.output_norm.data(), int64_t(E), hp_.rms_eps,
            xn.data() + r * E);
  }
  out->logits.resize(rows.size() * size_t(hp_.n_vocab));
  MatMul(w_.output, xn.data(), int64_t(rows.size()), out->logits.data(), &pool);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> LoadLlamaModel(std::shared_ptr<const GgufFile> file,
                                              std::string name) {
  KV_ASSIGN_OR_RETURN(LlamaHParams hp, ReadLlamaHParams(*file, std::move(name)));
  KV_ASSIGN_OR_RETURN(LlamaWeights w, LoadLlamaWeights(*file, hp));
  return std::unique_ptr<Model>(new LlamaModel(std::move(file), std::move(hp), std::move(w)));
}

}  // namespace kvengine
