#include "synth/synthetic_model.h"

#include <array>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "synth/synthetic_vocab.h"
#include "quant/weight_encode.h"

namespace kvengine {
namespace {

// llama.cpp's llama_ftype for a file whose matrices are all `type`. For the K-quants it is the
// "_S" variant (Q4_K_S, Q5_K_S), the one whose matrices are (nearly) all of that type.
uint32_t FileType(GgmlType type) {
  if (type == GgmlType::kF16) return 1;
  if (type == GgmlType::kQ4_0) return 2;
  if (type == GgmlType::kQ4_1) return 3;
  if (type == GgmlType::kQ8_0) return 7;
  if (type == GgmlType::kQ5_0) return 8;
  if (type == GgmlType::kQ5_1) return 9;
  if (type == GgmlType::kQ4_K) return 14;  // MOSTLY_Q4_K_S.
  if (type == GgmlType::kQ5_K) return 16;  // MOSTLY_Q5_K_S.
  if (type == GgmlType::kQ6_K) return 18;
  if (type == GgmlType::kBF16) return 32;
  return 0;  // kF32 (Validate admits only the types above).
}

// Declares the tensors and binds their fillers; see synthetic_spec.h for the shapes.
class TensorAdder {
 public:
  TensorAdder(const SyntheticModelSpec& spec, GgufWriter* writer, SynthProgress* progress)
      : spec_(spec), writer_(writer), progress_(progress) {}

  // A [fan_in, rows] matrix of spec.weight_type, uniform in +-SynthMatrixScale(fan_in).
  Status Matrix(const std::string& name, int64_t fan_in, int64_t rows) {
    const std::array<int64_t, 2> dims = {fan_in, rows};
    return writer_->AddTensor(
        name, spec_.weight_type, dims,
        UniformFiller(spec_.weight_type, fan_in * rows, SynthTensorKey(spec_.seed, name),
                      SynthMatrixScale(fan_in), progress_));
  }

  // An [n] F32 norm weight of ones.
  Status Norm(const std::string& name, int64_t n) {
    const std::array<int64_t, 1> dims = {n};
    return writer_->AddTensor(name, GgmlType::kF32, dims, ConstantF32Filler(n, 1.0f, progress_));
  }

  // An [n] F32 bias, uniform in +-SynthMatrixScale(fan_in) like the matrix it follows.
  Status Bias(const std::string& name, int64_t n, int64_t fan_in) {
    const std::array<int64_t, 1> dims = {n};
    return writer_->AddTensor(name, GgmlType::kF32, dims,
                              UniformFiller(GgmlType::kF32, n, SynthTensorKey(spec_.seed, name),
                                            SynthMatrixScale(fan_in), progress_));
  }

  // An F32 vector of the given values.
  Status Values(const std::string& name, std::vector<float> values) {
    const std::array<int64_t, 1> dims = {int64_t(values.size())};
    SynthProgress* progress = progress_;
    return writer_->AddTensor(
        name, GgmlType::kF32, dims, [values = std::move(values), progress](GgufSink& sink) {
          std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(values.data()),
                                     values.size() * sizeof(float));
          KV_RETURN_IF_ERROR(sink.Write(b));
          if (progress != nullptr) progress->Add(b.size(), true);
          return Status::Ok();
        });
  }

 private:
  const SyntheticModelSpec& spec_;
  GgufWriter* writer_;
  SynthProgress* progress_;
};

Status AddHyperParameters(const SyntheticModelSpec& s, GgufWriter& w) {
  const std::string a = s.architecture + ".";
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };  // Validate bounded them.
  KV_RETURN_IF_ERROR(w.AddString(kGgufArchitectureKey, s.architecture));
  KV_RETURN_IF_ERROR(w.AddString("general.name", s.name));
  KV_RETURN_IF_ERROR(w.AddU32("general.file_type", FileType(s.weight_type)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "vocab_size", u32(s.n_vocab)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "context_length", u32(s.context_length)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "embedding_length", u32(s.n_embd)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "block_count", u32(s.n_layers)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "feed_forward_length", u32(s.n_ff)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "attention.head_count", u32(s.n_heads)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "attention.head_count_kv", u32(s.n_kv_heads)));
  KV_RETURN_IF_ERROR(w.AddU32(a + "rope.dimension_count", u32(s.HeadDim())));
  if (s.n_embd % s.n_heads != 0 || s.HeadDim() != s.n_embd / s.n_heads) {
    KV_RETURN_IF_ERROR(w.AddU32(a + "attention.key_length", u32(s.HeadDim())));
    KV_RETURN_IF_ERROR(w.AddU32(a + "attention.value_length", u32(s.HeadDim())));
  }
  if (s.sliding_window > 0) {
    KV_RETURN_IF_ERROR(w.AddU32(a + "attention.sliding_window", u32(s.sliding_window)));
  }
  KV_RETURN_IF_ERROR(w.AddF32(a + "rope.freq_base", s.rope_theta));
  if (s.architecture == "gemma2") {  // Validate: both caps > 0 on gemma2.
    KV_RETURN_IF_ERROR(w.AddF32(a + "attn_logit_softcapping", s.attn_softcap));
  }
  if (s.final_softcap > 0) {
    KV_RETURN_IF_ERROR(w.AddF32(a + "final_logit_softcapping", s.final_softcap));
  }
  return w.AddF32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
}

// Llama-3.1's rope_freqs as its converter computes them (factor 8, low_freq_factor 1,
// high_freq_factor 4, original context 8192): pair i of frequency f = theta^(-2i / head_dim) has
// wavelength 2 pi / f; short wavelengths keep factor 1, long ones get 8, the band between is
// interpolated.
std::vector<float> Llama3RopeFactors(float theta, int head_dim) {
  constexpr double kFactor = 8, kLowFreqFactor = 1, kHighFreqFactor = 4, kOriginalContext = 8192;
  constexpr double kPi = 3.14159265358979323846;
  const double low_freq_wavelen = kOriginalContext / kLowFreqFactor;
  const double high_freq_wavelen = kOriginalContext / kHighFreqFactor;
  std::vector<float> factors;
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = std::pow(double(theta), -2.0 * i / double(head_dim));
    const double wavelen = 2 * kPi / freq;
    double factor = 1;
    if (wavelen > low_freq_wavelen) {
      factor = kFactor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth =
          (kOriginalContext / wavelen - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
      factor = 1 / ((1 - smooth) / kFactor + smooth);
    }
    factors.push_back(float(factor));
  }
  return factors;
}

Status AddTokenizer(const SyntheticModelSpec& s, GgufWriter& w) {
  const SyntheticVocab vocab = MakeSyntheticVocab(s.n_vocab);
  KV_RETURN_IF_ERROR(w.AddString("tokenizer.ggml.model", "llama"));
  KV_RETURN_IF_ERROR(
      w.AddStringArray("tokenizer.ggml.tokens", std::span<const std::string>(vocab.tokens)));
  KV_RETURN_IF_ERROR(w.AddArray("tokenizer.ggml.scores", std::span<const float>(vocab.scores)));
  KV_RETURN_IF_ERROR(
      w.AddArray("tokenizer.ggml.token_type", std::span<const int32_t>(vocab.types)));
  KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.bos_token_id", kSynthBosId));
  KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.eos_token_id", kSynthEosId));
  KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.unknown_token_id", kSynthUnkId));
  KV_RETURN_IF_ERROR(w.AddBool("tokenizer.ggml.add_bos_token", true));
  return w.AddBool("tokenizer.ggml.add_eos_token", false);
}

Status AddTensors(const SyntheticModelSpec& s, GgufWriter& w, SynthProgress* progress) {
  TensorAdder t(s, &w, progress);
  const int64_t embd = s.n_embd;
  const int64_t q_dim = int64_t{s.n_heads} * s.HeadDim();
  const int64_t kv_dim = int64_t{s.n_kv_heads} * s.HeadDim();
  const bool qwen2 = s.architecture == "qwen2";
  const bool gemma = s.architecture == "gemma2" || s.architecture == "gemma3";
  const bool qk_norm = s.architecture == "gemma3";
  KV_RETURN_IF_ERROR(t.Matrix("token_embd.weight", embd, s.n_vocab));
  if (s.rope_freqs) {
    KV_RETURN_IF_ERROR(t.Values("rope_freqs.weight", Llama3RopeFactors(s.rope_theta, s.HeadDim())));
  }
  for (int layer = 0; layer < s.n_layers; ++layer) {
    const std::string p = fmt::format("blk.{}.", layer);
    KV_RETURN_IF_ERROR(t.Norm(p + "attn_norm.weight", embd));
    KV_RETURN_IF_ERROR(t.Matrix(p + "attn_q.weight", embd, q_dim));
    KV_RETURN_IF_ERROR(t.Matrix(p + "attn_k.weight", embd, kv_dim));
    KV_RETURN_IF_ERROR(t.Matrix(p + "attn_v.weight", embd, kv_dim));
    if (qwen2) {
      KV_RETURN_IF_ERROR(t.Bias(p + "attn_q.bias", q_dim, embd));
      KV_RETURN_IF_ERROR(t.Bias(p + "attn_k.bias", kv_dim, embd));
      KV_RETURN_IF_ERROR(t.Bias(p + "attn_v.bias", kv_dim, embd));
    }
    if (qk_norm) {
      KV_RETURN_IF_ERROR(t.Norm(p + "attn_q_norm.weight", s.HeadDim()));
      KV_RETURN_IF_ERROR(t.Norm(p + "attn_k_norm.weight", s.HeadDim()));
    }
    KV_RETURN_IF_ERROR(t.Matrix(p + "attn_output.weight", q_dim, embd));
    if (gemma) KV_RETURN_IF_ERROR(t.Norm(p + "post_attention_norm.weight", embd));
    KV_RETURN_IF_ERROR(t.Norm(p + "ffn_norm.weight", embd));
    KV_RETURN_IF_ERROR(t.Matrix(p + "ffn_gate.weight", embd, s.n_ff));
    KV_RETURN_IF_ERROR(t.Matrix(p + "ffn_up.weight", embd, s.n_ff));
    KV_RETURN_IF_ERROR(t.Matrix(p + "ffn_down.weight", s.n_ff, embd));
    if (gemma) KV_RETURN_IF_ERROR(t.Norm(p + "post_ffw_norm.weight", embd));
  }
  KV_RETURN_IF_ERROR(t.Norm("output_norm.weight", embd));
  if (!s.tied_output) KV_RETURN_IF_ERROR(t.Matrix("output.weight", embd, s.n_vocab));
  return Status::Ok();
}

}  // namespace

Result<GgufWriter> BuildSyntheticWriter(const SyntheticModelSpec& spec, SynthProgress* progress) {
  KV_RETURN_IF_ERROR(spec.Validate());
  GgufWriter w;
  KV_RETURN_IF_ERROR(AddHyperParameters(spec, w));
  KV_RETURN_IF_ERROR(AddTokenizer(spec, w));
  KV_RETURN_IF_ERROR(w.AddString(kSyntheticSpecKey, SyntheticSpecString(spec)));
  KV_RETURN_IF_ERROR(AddTensors(spec, w, progress));
  return w;
}

Status WriteSyntheticModel(const SyntheticModelSpec& spec, const std::string& path,
                           const SyntheticProgressFn& progress) {
  SynthProgress counter;
  counter.callback = progress;
  KV_ASSIGN_OR_RETURN(GgufWriter writer, BuildSyntheticWriter(spec, &counter));
  KV_ASSIGN_OR_RETURN(counter.total, writer.FileSize());
  KV_RETURN_IF_ERROR(writer.WriteToFile(path));
  if (progress) progress(counter.total, counter.total);
  return Status::Ok();
}

uint64_t SyntheticModelBytes(const SyntheticModelSpec& spec) {
  Result<GgufWriter> writer = BuildSyntheticWriter(spec, nullptr);
  if (!writer.ok()) return 0;
  Result<uint64_t> size = writer->FileSize();
  return size.ok() ? *size : 0;
}

}  // namespace kvengine
