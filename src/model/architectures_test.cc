// Each architecture's reader on its synthetic preset (what it finds in the metadata and tensors),
// the pieces the architectures add to the shared forward pass (GeGLU, soft-capping, RoPE frequency
// factors, soft-capped paged attention) against plain formulas, and clear load errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "kernels/attention/attention_test_util.h"
#include "model/architectures.h"
#include "model/decoder_model.h"
#include "model/model_fuzz_format.h"
#include "model/softcap_attention.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine {
namespace {

constexpr double kPi = 3.14159265358979323846;
// Soft-capped attention (double inside) against its double reference on decoded rows.
constexpr float kSoftCapAttentionTolerance = 2e-5f;

// Writes `spec_text` (a synthetic preset with overrides) once per test binary and opens it.
std::shared_ptr<const GgufFile> Synthetic(const std::string& spec_text) {
  auto spec = ParseSyntheticSpec(spec_text);
  KV_CHECK(spec.ok()) << spec.status().ToString();
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("kvengine_arch_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (SyntheticSpecHash(*spec) + ".gguf")).string();
  if (!std::filesystem::exists(path)) KV_CHECK(WriteSyntheticModel(*spec, path).ok());
  auto f = GgufFile::Open(path);
  KV_CHECK(f.ok()) << f.status().ToString();
  return std::shared_ptr<const GgufFile>(std::move(f).value());
}

TEST(ArchitecturesTest, LlamaAndMistralAreThePlainGraph) {
  auto f = Synthetic("mistral-tiny");
  auto hp = ReadLlamaHParams(*f, "m");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  const DecoderArch& a = hp->arch;
  EXPECT_FALSE(a.qkv_bias || a.qk_norm || a.post_norms || a.has_local_rope);
  EXPECT_FALSE(a.rope.params.neox);
  EXPECT_TRUE(a.rope.freq_factors.empty());
  EXPECT_EQ(a.ffn_act, FfnActivation::kSilu);
  EXPECT_EQ(a.embd_scale, 0.0f);
  EXPECT_EQ(a.attn_softcap, 0.0f);
  EXPECT_EQ(a.final_softcap, 0.0f);
  EXPECT_EQ(hp->shape.sliding_window, 64);
  for (int l = 0; l < hp->shape.n_layers; ++l) EXPECT_TRUE(hp->shape.LayerWindowed(l));
}

TEST(ArchitecturesTest, Llama3ReadsRopeFreqsAndGqa) {
  auto f = Synthetic("llama3-tiny");
  auto hp = ReadLlamaHParams(*f, "l3");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_EQ(hp->shape.n_heads, 8);
  EXPECT_EQ(hp->shape.n_kv_heads, 2);
  EXPECT_EQ(hp->shape.head_dim_k, 16);
  EXPECT_FLOAT_EQ(hp->arch.rope.params.theta, 500000.0f);
  // theta 5e5, 16 dims: wavelengths 2 pi * 5e5^(i/8) = 6.3, 33, 168, 872 (< 2048: factor 1),
  // 4515 (between 2048 and 8192: 1 / ((1 - s) / 8 + s), s = (8192 / 4515 - 1) / 3), then > 8192: 8.
  const std::vector<float>& ff = hp->arch.rope.freq_factors;
  ASSERT_EQ(ff.size(), 8u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ff[size_t(i)], 1.0f) << i;
  const double wavelen = 2 * kPi * std::pow(500000.0, 4.0 / 8.0);
  const double s = (8192 / wavelen - 1) / 3;
  EXPECT_NEAR(ff[4], 1 / ((1 - s) / 8 + s), 1e-5);
  for (int i = 5; i < 8; ++i) EXPECT_EQ(ff[size_t(i)], 8.0f) << i;
}

TEST(ArchitecturesTest, Qwen2HasBiasesAndNeoxRope) {
  auto f = Synthetic("qwen2-tiny");
  auto hp = ReadQwen2HParams(*f, "q");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_TRUE(hp->arch.qkv_bias);
  EXPECT_TRUE(hp->arch.rope.params.neox);
  EXPECT_FLOAT_EQ(hp->arch.rope.params.theta, 1e6f);
  EXPECT_FLOAT_EQ(hp->rms_eps, 1e-6f);
  EXPECT_EQ(hp->shape.sliding_window, 0);
  // The same reader on a llama file (no biases) fails at load, naming the tensor.
  auto llama = Synthetic("tiny");
  auto no_bias = ReadQwen2HParams(*llama, "t");
  ASSERT_TRUE(no_bias.ok());
  auto m = LoadDecoderModel(llama, *no_bias);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0.attn_q.bias"), std::string::npos)
      << m.status().message();
}

TEST(ArchitecturesTest, Gemma2IsHybridSoftCappedGeGlu) {
  auto f = Synthetic("gemma2-tiny");
  auto hp = ReadGemma2HParams(*f, "g2");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  const DecoderArch& a = hp->arch;
  EXPECT_EQ(a.attn_softcap, 50.0f);
  EXPECT_EQ(a.final_softcap, 30.0f);
  EXPECT_EQ(a.embd_scale, 8.0f);                           // sqrt(64)
  EXPECT_FLOAT_EQ(a.attn_scale, 1.0f / std::sqrt(32.0f));  // head_dim 32, not n_embd / n_heads.
  EXPECT_TRUE(a.post_norms && a.rope.params.neox);
  EXPECT_FALSE(a.qk_norm || a.has_local_rope || a.qkv_bias);
  EXPECT_EQ(a.ffn_act, FfnActivation::kGeluTanh);
  EXPECT_EQ(hp->shape.sliding_window, 32);
  EXPECT_EQ(hp->shape.window_pattern, 2);
  const bool windowed[] = {true, false, true, false};  // llama.cpp: il % 2 == 0 is SWA.
  for (int l = 0; l < 4; ++l) EXPECT_EQ(hp->shape.LayerWindowed(l), windowed[l]) << l;
}

TEST(ArchitecturesTest, Gemma3HasQkNormAndLocalRope) {
  auto f = Synthetic("gemma3-tiny");
  auto hp = ReadGemma3HParams(*f, "g3");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  const DecoderArch& a = hp->arch;
  EXPECT_EQ(a.attn_softcap, 0.0f);
  EXPECT_EQ(a.final_softcap, 0.0f);
  EXPECT_TRUE(a.qk_norm && a.post_norms && a.has_local_rope);
  EXPECT_FLOAT_EQ(a.rope.params.theta, 1e6f);
  EXPECT_FLOAT_EQ(a.rope_local.params.theta, 10000.0f);
  EXPECT_EQ(a.rope_local.params.freq_scale, 1.0f);
  EXPECT_TRUE(a.rope_local.params.neox);
  for (int l = 0; l < 6; ++l) EXPECT_EQ(hp->shape.LayerWindowed(l), l != 5) << l;
  EXPECT_EQ(&a.RopeOf(true), &a.rope_local);
  EXPECT_EQ(&a.RopeOf(false), &a.rope);
}

TEST(ArchitecturesTest, GemmaAttentionScaleFollowsLlamaCpp) {
  ModelConfig c;
  c.architecture = "gemma2";
  c.n_embd = 4608;
  c.n_heads = 32;
  c.head_dim_k = 128;
  c.n_layers = 42;
  EXPECT_FLOAT_EQ(GemmaAttentionScale(c), 1.0f / std::sqrt(128.0f));
  c.n_layers = 46;  // gemma-2-27b: query_pre_attn_scalar = n_embd / n_heads = 144.
  EXPECT_FLOAT_EQ(GemmaAttentionScale(c), 1.0f / 12.0f);
}

TEST(ArchitecturesTest, UnknownArchitectureListsTheSupportedOnes) {
  auto f = Synthetic("tiny:architecture=falcon");
  auto m = LoadModel(f, "x");
  ASSERT_FALSE(m.ok());
  for (const std::string& name : SupportedArchitectures()) {
    EXPECT_NE(m.status().message().find(name), std::string::npos) << m.status().message();
  }
  EXPECT_NE(m.status().message().find("falcon"), std::string::npos);
}

TEST(ArchitecturesTest, EveryPresetLoads) {
  for (const char* preset :
       {"tiny", "mistral-tiny", "llama3-tiny", "qwen2-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    auto m = LoadModel(Synthetic(preset), preset);
    ASSERT_TRUE(m.ok()) << preset << ": " << m.status().ToString();
    EXPECT_EQ((*m)->n_vocab(), 512) << preset;
  }
}

TEST(DecoderPiecesTest, GeGluIsGeluTanhTimesUp) {
  const float gate[] = {-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 6.0f};
  const float up[] = {1.0f, 2.0f, 3.0f, -1.0f, 1.0f, 0.5f, 1.0f};
  float out[7];
  GeGlu(gate, up, 7, out);
  for (int i = 0; i < 7; ++i) {
    const double x = gate[i];
    const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], gelu * up[i], 1e-6) << x;
  }
  EXPECT_NEAR(out[4], 0.841192, 1e-5);  // gelu_tanh(1).
}

TEST(DecoderPiecesTest, SoftCapBoundsAndKeepsSmallValues) {
  std::vector<float> x = {-1000.0f, -30.0f, -0.01f, 0.0f, 0.01f, 30.0f, 1000.0f};
  SoftCap(x.data(), int64_t(x.size()), 30.0f);
  for (float v : x) EXPECT_LE(std::fabs(v), 30.0f);
  EXPECT_NEAR(x[2], -0.01f, 1e-7);
  EXPECT_NEAR(x[5], 30.0f * std::tanh(1.0f), 1e-5);
  EXPECT_EQ(x[3], 0.0f);
}

TEST(DecoderPiecesTest, RopeFactorsDivideEachPairsFrequency) {
  LayerRope plain;
  plain.params.n_rot = 8;
  plain.params.theta = 500000.0f;
  plain.params.freq_scale = 0.5f;
  LayerRope ones = plain;
  ones.freq_factors.assign(4, 1.0f);
  LayerRope scaled = plain;
  scaled.freq_factors = {1.0f, 2.0f, 4.0f, 8.0f};
  float a[8], b[8], c[8];
  for (int64_t pos : {0, 1, 77, 4000}) {
    LayerRopeCosSin(pos, plain, a);
    LayerRopeCosSin(pos, ones, b);
    LayerRopeCosSin(pos, scaled, c);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a[i], b[i]) << pos;  // Factors of 1: the same bits.
    for (int i = 0; i < 4; ++i) {
      const double angle = double(pos) * 0.5 * std::pow(500000.0, -2.0 * i / 8) /
                           double(scaled.freq_factors[size_t(i)]);
      EXPECT_NEAR(c[i], std::cos(angle), 1e-6) << pos << " pair " << i;
      EXPECT_NEAR(c[4 + i], std::sin(angle), 1e-6) << pos << " pair " << i;
    }
  }
}

// Soft-capped attention over paged blocks (every KV dtype, a window, GQA) against softmax of the
// capped scores computed on the decoded rows in double.
TEST(SoftCapAttentionTest, MatchesCappedSoftmaxOnDecodedRows) {
  for (KvDtype dtype : kAllKvDtypes) {
    for (int window : {0, 20}) {
      SCOPED_TRACE(std::string(KvDtypeName(dtype)) + " window " + std::to_string(window));
      attention_test::KvShape shape;
      shape.k_dtype = shape.v_dtype = dtype;
      shape.num_kv_heads = 2;
      shape.head_dim_k = shape.head_dim_v = 32;
      shape.window = window;
      const int64_t tokens = 70;
      auto kv = attention_test::MakeKv(shape, tokens, 7);
      const int n_heads = 4, group = 2;
      const float scale = 1.0f / std::sqrt(32.0f), cap = 1.5f;  // A cap that bites.
      std::mt19937 rng(3);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<int64_t> positions = {0, 5, 33, 69};
      std::vector<float> q(positions.size() * n_heads * 32), out(q.size());
      for (float& x : q) x = nd(rng);
      std::vector<AttentionQuery> queries;
      for (size_t i = 0; i < positions.size(); ++i) {
        queries.push_back(
            {kv.table, q.data() + i * n_heads * 32, positions[i], out.data() + i * n_heads * 32});
      }
      ThreadPool pool(2);
      SoftCappedAttentionBatch(kv.view, queries, n_heads, scale, cap, &pool);
      for (size_t i = 0; i < positions.size(); ++i) {
        const int64_t pos = positions[i];
        const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
        for (int h = 0; h < n_heads; ++h) {
          const int kh = h / group;
          const float* qh = q.data() + (i * n_heads + size_t(h)) * 32;
          std::vector<double> p;
          double mx = -1e300, sum = 0;
          for (int64_t t = lo; t <= pos; ++t) {
            const float* k = kv.k.data() + (size_t(t) * 2 + size_t(kh)) * 32;
            double dot = 0;
            for (int d = 0; d < 32; ++d) dot += double(qh[d]) * k[d];
            p.push_back(cap * std::tanh(dot * scale / cap));
            mx = std::max(mx, p.back());
          }
          for (double& x : p) sum += (x = std::exp(x - mx));
          for (int d = 0; d < 32; ++d) {
            double o = 0;
            for (int64_t t = lo; t <= pos; ++t) {
              o += p[size_t(t - lo)] * kv.v[(size_t(t) * 2 + size_t(kh)) * 32 + size_t(d)];
            }
            EXPECT_NEAR(out[(i * n_heads + size_t(h)) * 32 + size_t(d)], o / sum,
                        kSoftCapAttentionTolerance)
                << "pos " << pos << " head " << h << " dim " << d;
          }
        }
      }
    }
  }
}

// With a cap far above every score, soft-capped attention is the fused kernel's attention.
TEST(SoftCapAttentionTest, HugeCapEqualsPlainAttention) {
  attention_test::KvShape shape;
  shape.num_kv_heads = 2;
  shape.head_dim_k = shape.head_dim_v = 16;
  auto kv = attention_test::MakeKv(shape, 40, 9);
  std::vector<float> q(4 * 16, 0.25f), a(4 * 16), b(4 * 16);
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(int(i % 7) - 3) * 0.1f;
  const AttentionQuery qa[] = {{kv.table, q.data(), 39, a.data()}};
  const AttentionQuery qb[] = {{kv.table, q.data(), 39, b.data()}};
  PagedAttentionBatch(kv.view, qa, 4, 0.25f, nullptr);
  SoftCappedAttentionBatch(kv.view, qb, 4, 0.25f, 1e9f, nullptr);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

// model_fuzz's input format (model_fuzz_format.h) round-trips every op, index and value, and
// decodes any bytes (a short tail is ignored; the preset wraps).
TEST(ModelFuzzFormatTest, RoundTripsEveryEdit) {
  using namespace model_fuzz;  // NOLINT: a test of this format.
  Input in{5, {}};
  for (int op = 0; op < kNumOps; ++op) in.edits.push_back({Op(op), uint8_t(op * 37), -op * 99991});
  const Input back = Decode(Encode(in));
  EXPECT_EQ(back.preset, in.preset);
  ASSERT_EQ(back.edits.size(), in.edits.size());
  for (size_t i = 0; i < in.edits.size(); ++i) {
    EXPECT_EQ(back.edits[i].op, in.edits[i].op);
    EXPECT_EQ(back.edits[i].index, in.edits[i].index);
    EXPECT_EQ(back.edits[i].value, in.edits[i].value);
  }
  EXPECT_EQ(Decode(std::string(1, char(kNumPresets + 1)) + "abc").preset, 1u);
  EXPECT_TRUE(Decode("\x01"
                     "abcdefg")
                  .edits.size() == 1);
}

}  // namespace
}  // namespace kvengine
