#include "synth/synthetic_spec.h"

#include <string>

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(SyntheticSpecTest, PresetsAreValidWithTheRequestedShapes) {
  for (const std::string& name : SyntheticPresetNames()) {
    Result<SyntheticModelSpec> spec = FindSyntheticPreset(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->name, name);
    EXPECT_TRUE(spec->Validate().ok()) << name << ": " << spec->Validate().ToString();
  }
  SyntheticModelSpec b = *FindSyntheticPreset("llama-1b");
  EXPECT_EQ(b.n_embd, 2048);
  EXPECT_EQ(b.n_layers, 16);
  EXPECT_EQ(b.n_heads, 32);
  EXPECT_EQ(b.n_kv_heads, 8);
  EXPECT_EQ(b.HeadDim(), 64);
  EXPECT_EQ(b.n_ff, 5632);
  EXPECT_EQ(b.n_vocab, 32000);
  EXPECT_EQ(b.context_length, 32768);
  EXPECT_EQ(b.weight_type, GgmlType::kF16);
  EXPECT_EQ(FindSyntheticPreset("mistral-tiny")->sliding_window, 64);
  EXPECT_EQ(FindSyntheticPreset("mistral-small")->sliding_window, 1024);
  EXPECT_EQ(FindSyntheticPreset("tiny")->sliding_window, 0);
  // "small" is about 100M parameters (124M with its untied output).
  const int64_t small = SyntheticModelParams(*FindSyntheticPreset("small"));
  EXPECT_GT(small, 90'000'000);
  EXPECT_LT(small, 130'000'000);

  Result<SyntheticModelSpec> missing = FindSyntheticPreset("huge");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("llama-1b"), std::string::npos);
}

TEST(SyntheticSpecTest, ParamsCountEveryTensor) {
  SyntheticModelSpec s = *FindSyntheticPreset("tiny");  // 64 embd, 16 head_dim, 2 KV heads.
  const int64_t per_layer = 2 * 64 + 64 * (64 + 2 * 32) + 64 * 64 + 3 * 64 * 128;
  EXPECT_EQ(SyntheticModelParams(s), 2 * 512 * 64 + 64 + 2 * per_layer);
  s.tied_output = true;
  EXPECT_EQ(SyntheticModelParams(s), 512 * 64 + 64 + 2 * per_layer);
}

TEST(SyntheticSpecTest, ArchitecturePresetsAndTheirTensors) {
  const SyntheticModelSpec l3 = *FindSyntheticPreset("llama3-tiny");
  EXPECT_EQ(l3.architecture, "llama");
  EXPECT_TRUE(l3.rope_freqs);
  EXPECT_EQ(l3.n_heads / l3.n_kv_heads, 4);
  const SyntheticModelSpec q = *FindSyntheticPreset("qwen2-tiny");
  EXPECT_EQ(q.architecture, "qwen2");
  const SyntheticModelSpec g2 = *FindSyntheticPreset("gemma2-tiny");
  EXPECT_EQ(g2.architecture, "gemma2");
  EXPECT_EQ(g2.attn_softcap, 50.0f);
  EXPECT_EQ(g2.final_softcap, 30.0f);
  EXPECT_GT(g2.sliding_window, 0);
  const SyntheticModelSpec g3 = *FindSyntheticPreset("gemma3-tiny");
  EXPECT_EQ(g3.architecture, "gemma3");
  EXPECT_EQ(g3.n_layers, 6);  // Five windowed layers, then a global one.
  // Parameters: each architecture's extra tensors on top of the llama ones.
  auto llama_like = [](SyntheticModelSpec s) {
    s.architecture = "llama";
    s.rope_freqs = false;
    s.attn_softcap = s.final_softcap = 0;
    return SyntheticModelParams(s);
  };
  EXPECT_EQ(SyntheticModelParams(l3), llama_like(l3) + 8);  // rope_freqs [head_dim / 2].
  EXPECT_EQ(SyntheticModelParams(q), llama_like(q) + 2 * (64 + 2 * 32));  // q/k/v biases.
  EXPECT_EQ(SyntheticModelParams(g2), llama_like(g2) + 4 * 2 * 64);       // Post norms.
  EXPECT_EQ(SyntheticModelParams(g3), llama_like(g3) + 6 * (2 * 64 + 2 * 32));  // + q/k norms.
}

TEST(SyntheticSpecTest, OverridesSetEveryField) {
  SyntheticModelSpec s = *FindSyntheticPreset("tiny");
  Status st = ApplySyntheticOverrides(
      " n_layers=4, weight_type=Q8_0,name=my-model,architecture=llama,n_embd=128,n_heads=8,"
      "n_kv_heads=1,head_dim=32,n_ff=256,n_vocab=1000,context_length=8k,sliding_window=16,"
      "rope_theta=500000,rms_eps=1e-6,tied_output=yes,seed=42,rope_freqs=1,",
      &s);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(s.n_layers, 4);
  EXPECT_EQ(s.weight_type, GgmlType::kQ8_0);
  EXPECT_EQ(s.name, "my-model");
  EXPECT_EQ(s.n_embd, 128);
  EXPECT_EQ(s.n_heads, 8);
  EXPECT_EQ(s.n_kv_heads, 1);
  EXPECT_EQ(s.HeadDim(), 32);
  EXPECT_EQ(s.n_ff, 256);
  EXPECT_EQ(s.n_vocab, 1000);
  EXPECT_EQ(s.context_length, 8192);
  EXPECT_EQ(s.sliding_window, 16);
  EXPECT_FLOAT_EQ(s.rope_theta, 500000.0f);
  EXPECT_FLOAT_EQ(s.rms_eps, 1e-6f);
  EXPECT_TRUE(s.tied_output);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(s.rope_freqs);
  EXPECT_TRUE(ApplySyntheticOverrides("", &s).ok());
  SyntheticModelSpec g = *FindSyntheticPreset("gemma2-tiny");
  ASSERT_TRUE(ApplySyntheticOverrides("attn_softcap=20,final_softcap=15.5", &g).ok());
  EXPECT_EQ(g.attn_softcap, 20.0f);
  EXPECT_EQ(g.final_softcap, 15.5f);
  SyntheticModelSpec g_back = *FindSyntheticPreset("small");
  ASSERT_TRUE(ApplySyntheticOverrides(SyntheticSpecString(g), &g_back).ok());
  EXPECT_EQ(SyntheticSpecString(g_back), SyntheticSpecString(g));

  // The canonical string parses back to the same spec and hash.
  SyntheticModelSpec back = *FindSyntheticPreset("small");
  ASSERT_TRUE(ApplySyntheticOverrides(SyntheticSpecString(s), &back).ok());
  EXPECT_EQ(SyntheticSpecString(back), SyntheticSpecString(s));
  EXPECT_EQ(SyntheticSpecHash(back), SyntheticSpecHash(s));
}

TEST(SyntheticSpecTest, BadOverridesAreClearErrors) {
  struct Case {
    const char* text;
    const char* expected;  // A fragment of the message.
  };
  const Case cases[] = {
      {"n_layer=4", "unknown key 'n_layer'"},
      {"n_layers", "not of the form key=value"},
      {"n_layers=four", "n_layers: 'four' is not an integer"},
      {"n_layers=4x", "is not an integer"},
      {"n_layers=0", "n_layers = 0 is outside"},
      {"seed=-1", "seed: '-1' is not an integer"},
      {"weight_type=q2_K", "weight_type: 'q2_K' is not one of f32, f16, bf16, q8_0, q4_0"},
      {"weight_type=foo", "weight_type: 'foo'"},
      {"tied_output=maybe", "tied_output: 'maybe'"},
      {"rope_theta=abc", "rope_theta: 'abc' is not a number"},
      {"rope_theta=-1", "rope_theta"},
      {"rms_eps=2", "rms_eps"},
      {"n_kv_heads=3", "multiple of n_kv_heads"},
      {"n_kv_heads=8", "n_kv_heads = 8 is outside"},
      {"n_embd=66", "multiple of n_heads"},
      {"weight_type=q8_0,n_ff=100", "multiples of 32"},
      {"weight_type=q5_1,n_ff=100",
       "weight_type q5_1 needs n_embd, n_ff and n_heads * head_dim to be multiples of 32 (its "
       "block size); n_ff is 100"},
      {"weight_type=q4_K",
       "weight_type q4_K needs n_embd, n_ff and n_heads * head_dim to be multiples of 256 (its "
       "block size); n_embd is 64"},
      {"weight_type=q6_K,n_embd=256", "q6_K needs"},  // n_ff 128.
      {"weight_type=q5_k,n_embd=256,n_ff=256,head_dim=32", "n_heads * head_dim is 128"},
      {"n_vocab=100", "n_vocab = 100 is outside"},
      {"name=../x", "name '../x'"},
      {"architecture=Llama", "architecture 'Llama'"},
      {"context_length=lots", "context_length: 'lots'"},
      {"rope_freqs=2", "rope_freqs: '2'"},
      {"architecture=qwen2,rope_freqs=true", "rope_freqs is a llama"},
      {"attn_softcap=50", "attn_softcap is gemma2's"},
      {"final_softcap=30", "final_softcap is gemma's"},
      {"final_softcap=-1", "final_softcap -1 must be >= 0"},
      {"architecture=gemma2,tied_output=true", "gemma2 needs attn_softcap and final_softcap"},
      {"architecture=gemma3", "gemma ties its output"},
  };
  for (const Case& c : cases) {
    SyntheticModelSpec s = *FindSyntheticPreset("tiny");
    Status st = ApplySyntheticOverrides(c.text, &s);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(st.message().find(c.expected), std::string::npos) << c.text << " -> " << st.message();
  }
  // A failed single override leaves the spec unchanged.
  SyntheticModelSpec s = *FindSyntheticPreset("tiny");
  EXPECT_FALSE(ApplySyntheticOverride("n_embd", "x", &s).ok());
  EXPECT_EQ(s.n_embd, 64);
}

TEST(SyntheticSpecTest, ParseSpecTakesPresetAndOverrides) {
  Result<SyntheticModelSpec> s = ParseSyntheticSpec("mistral-tiny:n_layers=3");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->n_layers, 3);
  EXPECT_EQ(s->sliding_window, 64);
  EXPECT_TRUE(ParseSyntheticSpec("small").ok());
  EXPECT_FALSE(ParseSyntheticSpec("nope:n_layers=3").ok());
  EXPECT_FALSE(ParseSyntheticSpec("tiny:bogus=1").ok());
}

TEST(SyntheticSpecTest, EveryWeightTypeIsAcceptedOnWholeBlocks) {
  // The 32-element block types on the 64-wide presets; the K-quants where every matrix row is a
  // whole number of 256-element super-blocks (small: 768 / 2048; llama-1b: 2048 / 5632).
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1"}) {
    for (const char* preset : {"tiny", "llama3-tiny", "gemma3-tiny"}) {
      Result<SyntheticModelSpec> s =
          ParseSyntheticSpec(std::string(preset) + ":weight_type=" + type);
      EXPECT_TRUE(s.ok()) << preset << " " << type << ": " << s.status().ToString();
    }
  }
  for (const char* type : {"q4_K", "q5_K", "q6_K", "Q4_K", "q6_k"}) {
    for (const char* preset : {"small", "llama-1b", "tiny:n_embd=256,n_ff=512"}) {
      const std::string sep = std::string(preset).find(':') == std::string::npos ? ":" : ",";
      Result<SyntheticModelSpec> s =
          ParseSyntheticSpec(std::string(preset) + sep + "weight_type=" + type);
      ASSERT_TRUE(s.ok()) << preset << " " << type << ": " << s.status().ToString();
      EXPECT_EQ(s->weight_type, *GgmlTypeFromName(type));
    }
  }
}

TEST(SyntheticSpecTest, HashChangesWithEveryField) {
  const SyntheticModelSpec base = *FindSyntheticPreset("tiny");
  const std::string h = SyntheticSpecHash(base);
  EXPECT_EQ(h.size(), 12u);
  const char* changes[] = {"name=x",           "n_layers=3",       "n_embd=128",
                           "n_heads=8",        "n_kv_heads=4",     "head_dim=32",
                           "n_ff=256",         "n_vocab=600",      "context_length=1024",
                           "sliding_window=8", "rope_theta=1000",  "rms_eps=1e-6",
                           "weight_type=f16",  "tied_output=true", "seed=1",
                           "rope_freqs=true"};
  for (const char* change : changes) {
    SyntheticModelSpec s = base;
    ASSERT_TRUE(ApplySyntheticOverrides(change, &s).ok()) << change;
    EXPECT_NE(SyntheticSpecHash(s), h) << change;
  }
  // head_dim=0 and the head_dim it resolves to describe the same model.
  SyntheticModelSpec explicit_dim = base;
  explicit_dim.head_dim = 16;
  EXPECT_EQ(SyntheticSpecHash(explicit_dim), h);
}

}  // namespace
}  // namespace kvengine
