#include "synth/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "model/gguf_config.h"
#include "synth/synth_test_util.h"
#include "synth/synthetic_vocab.h"
#include "quant/weight_encode.h"

namespace kvengine {
namespace {

using synth_test::ScopedTempDir;

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::unique_ptr<GgufFile> WriteAndOpen(const SyntheticModelSpec& spec, const std::string& path) {
  Status st = WriteSyntheticModel(spec, path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

struct ExpectedTensor {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;
};

std::vector<ExpectedTensor> ExpectedTensors(const SyntheticModelSpec& s) {
  const GgmlType w = s.weight_type;
  const int64_t e = s.n_embd, q = int64_t{s.n_heads} * s.HeadDim();
  const int64_t kv = int64_t{s.n_kv_heads} * s.HeadDim();
  const GgmlType f32 = GgmlType::kF32;
  const bool gemma = s.architecture == "gemma2" || s.architecture == "gemma3";
  std::vector<ExpectedTensor> out = {{"token_embd.weight", w, {e, s.n_vocab}}};
  if (s.rope_freqs) out.push_back({"rope_freqs.weight", f32, {s.HeadDim() / 2}});
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    out.push_back({p + "attn_norm.weight", f32, {e}});
    out.push_back({p + "attn_q.weight", w, {e, q}});
    out.push_back({p + "attn_k.weight", w, {e, kv}});
    out.push_back({p + "attn_v.weight", w, {e, kv}});
    if (s.architecture == "qwen2") {
      out.push_back({p + "attn_q.bias", f32, {q}});
      out.push_back({p + "attn_k.bias", f32, {kv}});
      out.push_back({p + "attn_v.bias", f32, {kv}});
    }
    if (s.architecture == "gemma3") {
      out.push_back({p + "attn_q_norm.weight", f32, {s.HeadDim()}});
      out.push_back({p + "attn_k_norm.weight", f32, {s.HeadDim()}});
    }
    out.push_back({p + "attn_output.weight", w, {q, e}});
    if (gemma) out.push_back({p + "post_attention_norm.weight", f32, {e}});
    out.push_back({p + "ffn_norm.weight", f32, {e}});
    out.push_back({p + "ffn_gate.weight", w, {e, s.n_ff}});
    out.push_back({p + "ffn_up.weight", w, {e, s.n_ff}});
    out.push_back({p + "ffn_down.weight", w, {s.n_ff, e}});
    if (gemma) out.push_back({p + "post_ffw_norm.weight", f32, {e}});
  }
  out.push_back({"output_norm.weight", GgmlType::kF32, {e}});
  if (!s.tied_output) out.push_back({"output.weight", w, {e, s.n_vocab}});
  return out;
}

void ExpectTensors(const GgufFile& f, const SyntheticModelSpec& s) {
  const std::vector<ExpectedTensor> expected = ExpectedTensors(s);
  ASSERT_EQ(f.tensors().size(), expected.size());
  int64_t params = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    EXPECT_EQ(t.name, expected[i].name);
    EXPECT_EQ(t.type, expected[i].type) << t.name;
    EXPECT_EQ(std::vector<int64_t>(t.shape().begin(), t.shape().end()), expected[i].dims) << t.name;
    params += t.n_elements;
  }
  EXPECT_EQ(params, SyntheticModelParams(s));
}

// llama.cpp's llama_ftype of a file whose matrices are all `type` (the K-quants' "_S" variants).
uint32_t LlamaFileType(GgmlType type) {
  const std::map<GgmlType, uint32_t> file_types = {
      {GgmlType::kF32, 0},   {GgmlType::kF16, 1},   {GgmlType::kQ4_0, 2}, {GgmlType::kQ4_1, 3},
      {GgmlType::kQ8_0, 7},  {GgmlType::kQ5_0, 8},  {GgmlType::kQ5_1, 9}, {GgmlType::kQ4_K, 14},
      {GgmlType::kQ5_K, 16}, {GgmlType::kQ6_K, 18}, {GgmlType::kBF16, 32}};
  return file_types.at(type);
}

// A synthetic model written, opened and read back as a config.
struct WrittenModel {
  SyntheticModelSpec spec;
  std::unique_ptr<GgufFile> file;
  ModelConfig config;
};

// Writes the model of spec `text` into `dir`; checks its size, tensors and file type; reads back
// its config.
void WriteAndReadBack(const ScopedTempDir& dir, const char* text, WrittenModel* out) {
  Result<SyntheticModelSpec> spec = ParseSyntheticSpec(text);
  ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
  const std::string path = dir.File(spec->name + ".gguf");
  std::unique_ptr<GgufFile> f = WriteAndOpen(*spec, path);
  ASSERT_NE(f, nullptr) << text;
  EXPECT_EQ(std::filesystem::file_size(path), SyntheticModelBytes(*spec)) << text;
  ExpectTensors(*f, *spec);
  EXPECT_EQ(*f->GetU32("general.file_type"), LlamaFileType(spec->weight_type)) << text;
  Result<ModelConfig> c = ModelConfigFromGguf(*f, spec->name);
  ASSERT_TRUE(c.ok()) << text << ": " << c.status().ToString();
  out->spec = *spec;
  out->file = std::move(f);
  out->config = *c;
}

TEST(SyntheticModelTest, TinyReadsBackWithItsShape) {
  ScopedTempDir dir;
  const SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  const std::string path = dir.File("tiny.gguf");
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  ASSERT_TRUE(WriteSyntheticModel(spec, path, [&](uint64_t done, uint64_t total) {
                EXPECT_GE(done, last_done);
                last_done = done;
                last_total = total;
                ++calls;
              }).ok());
  EXPECT_GE(calls, 1);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, SyntheticModelBytes(spec));
  EXPECT_EQ(std::filesystem::file_size(path), SyntheticModelBytes(spec));

  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  Result<ModelConfig> config = ModelConfigFromGguf(f, "tiny");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->architecture, "llama");
  EXPECT_EQ(config->n_layers, 2);
  EXPECT_EQ(config->n_embd, 64);
  EXPECT_EQ(config->n_heads, 4);
  EXPECT_EQ(config->n_kv_heads, 2);
  EXPECT_EQ(config->head_dim_k, 16);
  EXPECT_EQ(config->head_dim_v, 16);
  EXPECT_EQ(config->context_length, 512);
  EXPECT_EQ(config->sliding_window, 0);
  ExpectTensors(f, spec);

  EXPECT_EQ(*f.GetString("general.name"), "tiny");
  EXPECT_EQ(*f.GetU32("llama.feed_forward_length"), 128u);
  EXPECT_EQ(*f.GetU32("llama.rope.dimension_count"), 16u);
  EXPECT_FLOAT_EQ(*f.GetF32("llama.rope.freq_base"), 10000.0f);
  EXPECT_FLOAT_EQ(*f.GetF32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*f.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(f.GetF32Array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f.GetIntArray("tokenizer.ggml.token_type")->size(), 512u);
  EXPECT_EQ(*f.GetU32("tokenizer.ggml.bos_token_id"), kSynthBosId);
  EXPECT_EQ(*f.GetU32("tokenizer.ggml.eos_token_id"), kSynthEosId);
  EXPECT_EQ(*f.GetString(kSyntheticSpecKey), SyntheticSpecString(spec));

  // Norms are ones; matrices are spread within their uniform range, not constant.
  std::vector<float> norm(64);
  DecodeWeights(GgmlType::kF32, f.FindTensor("blk.1.ffn_norm.weight")->data, norm);
  for (float v : norm) EXPECT_EQ(v, 1.0f);
  const GgufTensor* q = f.FindTensor("blk.0.attn_q.weight");
  std::vector<float> w(static_cast<size_t>(q->n_elements));
  DecodeWeights(GgmlType::kF32, q->data, w);
  const float scale = SynthMatrixScale(64);
  float lo = 0, hi = 0;
  for (float v : w) {
    ASSERT_LE(std::fabs(v), scale);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_LT(lo, -0.9f * scale);
  EXPECT_GT(hi, 0.9f * scale);
}

TEST(SyntheticModelTest, EveryWeightTypeAndWindowReadsBack) {
  ScopedTempDir dir;
  for (const char* text :
       {"mistral-tiny:weight_type=f16", "tiny:weight_type=bf16,n_layers=1",
        "tiny:weight_type=q8_0,n_kv_heads=1", "tiny:weight_type=q4_0,n_layers=1",
        "tiny:weight_type=q4_1,n_layers=1", "tiny:weight_type=q5_0,n_layers=1",
        "tiny:weight_type=q5_1,n_layers=1", "tiny:weight_type=q4_K,n_embd=256,n_ff=512,n_layers=1",
        "tiny:weight_type=q5_K,n_embd=256,n_ff=256,n_layers=1",
        "llama3-tiny:weight_type=q6_K,n_embd=256,n_ff=256,head_dim=32",
        "tiny:head_dim=32,n_heads=2,n_kv_heads=2,n_layers=1"}) {
    WrittenModel m;
    ASSERT_NO_FATAL_FAILURE(WriteAndReadBack(dir, text, &m));
    const SyntheticModelSpec* spec = &m.spec;
    const ModelConfig* c = &m.config;
    EXPECT_EQ(c->n_layers, spec->n_layers) << text;
    EXPECT_EQ(c->n_kv_heads, spec->n_kv_heads) << text;
    EXPECT_EQ(c->head_dim_k, spec->HeadDim()) << text;
    EXPECT_EQ(c->sliding_window, spec->sliding_window) << text;
    EXPECT_EQ(c->context_length, spec->context_length) << text;
  }
}

TEST(SyntheticModelTest, EveryArchitecturePresetWritesItsTensorsAndKeys) {
  ScopedTempDir dir;
  for (const char* text : {"llama3-tiny", "qwen2-tiny:weight_type=q8_0",
                           "gemma2-tiny:weight_type=f16", "gemma3-tiny:weight_type=bf16"}) {
    WrittenModel m;
    ASSERT_NO_FATAL_FAILURE(WriteAndReadBack(dir, text, &m));
    const SyntheticModelSpec* spec = &m.spec;
    GgufFile* f = m.file.get();
    const ModelConfig* c = &m.config;
    EXPECT_EQ(c->architecture, spec->architecture);
    EXPECT_EQ(c->sliding_window, spec->sliding_window) << text;
    EXPECT_EQ(c->window_pattern, WindowPatternOf(spec->architecture)) << text;
    const std::string a = spec->architecture + ".";
    EXPECT_EQ(f->Has(a + "attn_logit_softcapping"), spec->architecture == "gemma2") << text;
    EXPECT_EQ(f->Has(a + "final_logit_softcapping"), spec->final_softcap > 0) << text;
    if (spec->architecture == "gemma2") {
      EXPECT_EQ(*f->GetF32("gemma2.attn_logit_softcapping"), 50.0f);
      EXPECT_EQ(*f->GetF32("gemma2.final_logit_softcapping"), 30.0f);
    }
  }
  // Llama-3.1's frequency factors for theta 5e5 and head_dim 16: 1 for short wavelengths, 8 for
  // long ones, one interpolated pair between.
  std::unique_ptr<GgufFile> l3 =
      WriteAndOpen(*FindSyntheticPreset("llama3-tiny"), dir.File("l3.gguf"));
  ASSERT_NE(l3, nullptr);
  std::vector<float> factors(8);
  DecodeWeights(GgmlType::kF32, l3->FindTensor("rope_freqs.weight")->data, factors);
  EXPECT_EQ(factors[0], 1.0f);
  EXPECT_EQ(factors[3], 1.0f);
  EXPECT_GT(factors[4], 1.0f);
  EXPECT_LT(factors[4], 8.0f);
  EXPECT_EQ(factors[7], 8.0f);
}

TEST(SyntheticModelTest, TiedOutputHasNoOutputWeight) {
  ScopedTempDir dir;
  SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  spec.tied_output = true;
  std::unique_ptr<GgufFile> f = WriteAndOpen(spec, dir.File("tied.gguf"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->FindTensor("output.weight"), nullptr);
  EXPECT_NE(f->FindTensor("token_embd.weight"), nullptr);
  ExpectTensors(*f, spec);
}

TEST(SyntheticModelTest, SameSeedSameBytesOtherSeedOtherWeights) {
  ScopedTempDir dir;
  SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  spec.weight_type = GgmlType::kQ8_0;
  ASSERT_TRUE(WriteSyntheticModel(spec, dir.File("a.gguf")).ok());
  ASSERT_TRUE(WriteSyntheticModel(spec, dir.File("b.gguf")).ok());
  spec.seed = 1;
  ASSERT_TRUE(WriteSyntheticModel(spec, dir.File("c.gguf")).ok());
  const std::vector<char> a = ReadAll(dir.File("a.gguf"));
  EXPECT_EQ(a, ReadAll(dir.File("b.gguf")));
  const std::vector<char> c = ReadAll(dir.File("c.gguf"));
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
  // Every matrix differs, not only the seed string in the metadata.
  std::unique_ptr<GgufFile> fa = std::move(GgufFile::Open(dir.File("a.gguf"))).value();
  std::unique_ptr<GgufFile> fc = std::move(GgufFile::Open(dir.File("c.gguf"))).value();
  for (size_t i = 0; i < fa->tensors().size(); ++i) {
    const GgufTensor& ta = fa->tensors()[i];
    const GgufTensor& tc = fc->tensors()[i];
    const bool same = std::equal(ta.data.begin(), ta.data.end(), tc.data.begin());
    EXPECT_EQ(same, ta.type == GgmlType::kF32) << ta.name;  // Only the norms are equal.
  }
}

TEST(SyntheticModelTest, InvalidSpecIsAnErrorAndWritesNothing) {
  ScopedTempDir dir;
  SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  spec.n_kv_heads = 3;
  const std::string path = dir.File("bad.gguf");
  EXPECT_FALSE(WriteSyntheticModel(spec, path).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(SyntheticModelBytes(spec), 0u);
}

}  // namespace
}  // namespace kvengine
