// Every architecture and weight type end to end on its tiny synthetic model: the preset of
// each architecture (llama, mistral, Llama-3, qwen2, gemma2, gemma3) in every synthetic weight
// type through load, prefill and greedy decode over the paged KV cache. In the float types and
// q8_0 (f32, f16, bf16, q8_0):
//   * paged (blocks of 16) and contiguous (one block per sequence, the layout
//     PagedAttentionBatch documents as contiguous) give the same tokens and the same logits bits,
//     for every KV dtype; so do chunked prefill and a prefix-cache hit;
//   * each KV dtype's teacher-forced logits stay within its named budget of f32 KV's;
//   * a mixed batch gives every sequence the logits it gets alone (batch invariance);
//   * the windowed layers' KV stays bounded while the full layers' grows (gemma2/3, mistral).
// In the block types (q4_0, q4_1, q5_0, q5_1 on the presets' shapes; q4_K, q5_K, q6_K on a
// 256-wide variant of each, KQuantShape):
//   * paged and contiguous give the same tokens and logits bits (one KV dtype per pair, turning);
//   * a mixed batch gives a sequence the logits it gets alone;
//   * the teacher-forced logits stay within the type's named budget of the same model in f32
//     weights (the same random values: weights depend on seed, tensor name and index only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "kernels/attention/attention_kernel.h"
#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"
#include "synth/synthetic_spec.h"

namespace kvengine {
namespace {

constexpr const char* kPresets[] = {"tiny",       "mistral-tiny", "llama3-tiny",
                                    "qwen2-tiny", "gemma2-tiny",  "gemma3-tiny"};
constexpr const char* kWeightTypes[] = {"f32", "f16", "bf16", "q8_0"};

// Largest |logit - f32 KV's logit| over 120 teacher-forced positions, per KV dtype, for every
// preset and weight type. Logits of these models reach |2-3|. Measured maxima over the 24 models
// (the deepest, gemma3-tiny's 6 layers, err most): f16 0.0014, bf16 0.011, fp8_e4m3 0.18,
// fp8_e5m2 0.36, int8 0.036, int4 0.62. Budgets are about 3x those, so that rounding noise passes
// while a broken codec or a layer reading another layer's dtype (errors of the logits' own size)
// fails.
float LogitBudget(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32:
      return 0.0f;
    case KvDtype::kF16:
      return 0.005f;
    case KvDtype::kBF16:
      return 0.03f;
    case KvDtype::kFp8E4M3:
      return 0.5f;
    case KvDtype::kFp8E5M2:
      return 1.0f;
    case KvDtype::kInt8:
      return 0.1f;
    case KvDtype::kInt4:
      return 1.5f;
  }
  return 0.0f;
}
// Q8_0 weights multiply activations quantized to q8_0 (as llama.cpp): a KV rounding that moves an
// activation across a code boundary moves the next layer's sums by a whole code step, so every
// KV dtype errs more there (measured up to 0.062 with f16 KV, where float weights err 0.0014).
constexpr float kQ8_0WeightsSlack = 0.15f;

// The K-quants store rows in super-blocks of 256 elements, and the spec rejects a model whose
// matrix rows (n_embd, n_ff, n_heads * head_dim) are not whole super-blocks; the presets are 64
// wide.
bool IsKQuant(const std::string& weight_type) {
  return weight_type == "q4_K" || weight_type == "q5_K" || weight_type == "q6_K";
}

// Overrides that widen a preset to K-quant rows: n_embd 256, n_ff 512; a preset that sets
// head_dim (q_dim != n_embd on purpose: llama3-tiny, the gemmas) gets the head_dim that makes
// q_dim 512, still != n_embd. Everything else (layers, heads, windows, soft caps) stays.
std::string KQuantShape(const std::string& preset) {
  Result<SyntheticModelSpec> base = FindSyntheticPreset(preset);
  KV_CHECK(base.ok()) << base.status().ToString();
  std::string o = ",n_embd=256,n_ff=512";
  if (base->head_dim != 0) o += ",head_dim=" + std::to_string(512 / base->n_heads);
  return o;
}

// The preset with `weight_type` (widened by KQuantShape when `wide`), generated once per test
// process.
std::shared_ptr<const Model> Synthetic(const std::string& preset, const std::string& weight_type,
                                       bool wide = false) {
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  const std::string text =
      preset + ":weight_type=" + weight_type + (wide ? KQuantShape(preset) : std::string());
  auto it = cache.find(text);
  if (it != cache.end()) return it->second;
  testing::LoadedModel m = testing::LoadForTest(testing::SyntheticForTest(text, "arch_e2e"));
  std::shared_ptr<const Model> model(std::move(m.model));
  cache.emplace(text, model);
  return model;
}

std::vector<int32_t> ArchPrompt(int n, int salt = 0) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 101) % 500);
  return p;
}

// Contiguous: one block of 256 tokens per group holds the whole sequence.
constexpr int kContiguousBlock = 256;
constexpr int64_t kCtx = 256;

std::unique_ptr<KvCacheManager> Kv(const Model& m, KvDtype dtype, int block_size,
                                   bool prefix = false) {
  const int32_t blocks = block_size == kContiguousBlock ? 8 : 128;
  return testing::MakeKv(m, dtype, kCtx, block_size, prefix, blocks);
}

// Greedy decoding of `n` tokens after `prompt` in paged blocks of 16 (its result in `*paged`)
// gives the tokens and logits of the same in one contiguous block per group.
void ExpectPagedEqualsContiguous(const Model& model, KvDtype dtype,
                                 const std::vector<int32_t>& prompt, int n, ThreadPool& pool,
                                 GenerateResult* paged) {
  auto paged_kv = Kv(model, dtype, 16);
  auto r = Generate(model, *paged_kv, pool, 1, prompt, testing::GreedyOptions(n));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto contiguous_kv = Kv(model, dtype, kContiguousBlock);
  auto contiguous = Generate(model, *contiguous_kv, pool, 1, prompt, testing::GreedyOptions(n));
  ASSERT_TRUE(contiguous.ok()) << contiguous.status().ToString();
  EXPECT_EQ(r->output_ids, contiguous->output_ids);
  EXPECT_EQ(r->last_logits, contiguous->last_logits);
  *paged = std::move(*r);
}

TEST(ArchitectureE2eTest, PagedEqualsContiguousForEveryKvDtype) {
  ThreadPool pool(2);
  const auto prompt = ArchPrompt(70);  // Past both windows (32, 64) before decoding starts.
  for (size_t pi = 0; pi < std::size(kPresets); ++pi) {
    const char* preset = kPresets[pi];
    for (size_t di = 0; di < std::size(kAllKvDtypes); ++di) {
      // Every (preset, KV dtype) pair, and every (preset, weight type) pair along the way: the
      // weight type turns with the dtype (the layout does not touch the weights).
      const KvDtype dtype = kAllKvDtypes[di];
      const char* wt = kWeightTypes[(pi + di) % std::size(kWeightTypes)];
      SCOPED_TRACE(std::string(preset) + " " + wt + " KV " + std::string(KvDtypeName(dtype)));
      auto model = Synthetic(preset, wt);
      GenerateResult paged;
      ASSERT_NO_FATAL_FAILURE(ExpectPagedEqualsContiguous(*model, dtype, prompt, 16, pool, &paged));
      // Chunked prefill (chunks of 7) and then a prefix-cache hit on the same prompt.
      auto cached_kv = Kv(*model, dtype, 16, /*prefix=*/true);
      GenerateOptions chunked = testing::GreedyOptions(16);
      chunked.prefill_chunk = 7;
      auto first = Generate(*model, *cached_kv, pool, 1, prompt, chunked);
      ASSERT_TRUE(first.ok()) << first.status().ToString();
      EXPECT_EQ(first->output_ids, paged.output_ids);
      EXPECT_EQ(first->last_logits, paged.last_logits);
      auto hit = Generate(*model, *cached_kv, pool, 2, prompt, testing::GreedyOptions(16));
      ASSERT_TRUE(hit.ok()) << hit.status().ToString();
      EXPECT_EQ(hit->cached_prompt_tokens, 64);  // Four whole blocks of the 70-token prompt.
      EXPECT_EQ(hit->output_ids, paged.output_ids);
      EXPECT_EQ(hit->last_logits, paged.last_logits);
    }
  }
}

// All logits of `ids` (teacher forcing) in one forward pass.
std::vector<float> TeacherForced(const Model& m, KvDtype dtype, std::span<const int32_t> ids,
                                 ThreadPool& pool) {
  auto kv = Kv(m, dtype, 16);
  KV_CHECK(kv->AddSequence(1).ok());
  KV_CHECK(kv->Append(1, ids).ok);
  const SeqChunk chunk[] = {{1, 0, ids, true}};
  ForwardOutput out;
  KV_CHECK(m.Forward(chunk, *kv, pool, &out).ok());
  return out.logits;
}

TEST(ArchitectureE2eTest, KvDtypesStayWithinTheirLogitBudgets) {
  ThreadPool pool(2);
  const auto ids = ArchPrompt(120, 3);
  std::map<KvDtype, float> worst, worst_q8;  // Over float weights; over q8_0 weights.
  for (const char* preset : kPresets) {
    for (const char* wt : kWeightTypes) {
      auto model = Synthetic(preset, wt);
      const std::vector<float> ref = TeacherForced(*model, KvDtype::kF32, ids, pool);
      for (KvDtype dtype : kAllKvDtypes) {
        SCOPED_TRACE(std::string(preset) + " " + wt + " KV " + std::string(KvDtypeName(dtype)));
        const std::vector<float> got = TeacherForced(*model, dtype, ids, pool);
        ASSERT_EQ(got.size(), ref.size());
        float max_err = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          max_err = std::max(max_err, std::fabs(got[i] - ref[i]));
        }
        const bool q8 = std::string(wt) == "q8_0";
        EXPECT_LE(max_err,
                  LogitBudget(dtype) + (q8 && dtype != KvDtype::kF32 ? kQ8_0WeightsSlack : 0));
        float& w = q8 ? worst_q8[dtype] : worst[dtype];
        w = std::max(w, max_err);
      }
    }
  }
  for (const auto& [dtype, err] : worst) {
    std::printf("  KV %-8s max |logit - f32 KV logit| %.4f (budget %.4f), q8_0 weights %.4f\n",
                std::string(KvDtypeName(dtype)).c_str(), err, LogitBudget(dtype), worst_q8[dtype]);
  }
}

// The logits that a kernel's narrower steps (`steps`: its flag in AttentionKernels) add to each of
// `dtypes`' own error, against the f32 steps of the same target, on a model whose head dim (64)
// takes the steps (the presets above have 8-32): at most a quarter of it.
void ExpectStepsMoveLogitsLittle(bool AttentionKernels::*steps, std::span<const KvDtype> dtypes) {
  const AttentionKernels* narrow = nullptr;
  const AttentionKernels* f32 = nullptr;
  const std::vector<AttentionKernels> kernels = AvailableAttentionKernels();
  for (const AttentionKernels& k : kernels) {
    if (k.*steps && narrow == nullptr) narrow = &k;
  }
  if (narrow == nullptr) GTEST_SKIP() << "no attention kernel with these steps on this CPU";
  for (const AttentionKernels& k : kernels) {
    if (k.hwy_target == narrow->hwy_target && !k.fp8_bf16 && !k.int8_int16 && !k.int4_int8) {
      f32 = &k;
    }
  }
  ASSERT_NE(f32, nullptr);
  struct RestoreKernels {
    ~RestoreKernels() { EXPECT_TRUE(ForceAttentionKernels("auto").ok()); }
  } restore;
  ThreadPool pool(2);
  testing::LoadedModel m = testing::LoadForTest(testing::SyntheticForTest(
      "small:weight_type=f32,n_layers=4,n_ff=1024,n_vocab=2000", "arch_e2e"));
  const auto ids = ArchPrompt(200, 5);
  const std::vector<float> exact = TeacherForced(*m.model, KvDtype::kF32, ids, pool);
  for (KvDtype dtype : dtypes) {
    ASSERT_TRUE(ForceAttentionKernels(f32->target_name).ok());
    const std::vector<float> by_f32 = TeacherForced(*m.model, dtype, ids, pool);
    ASSERT_TRUE(ForceAttentionKernels(narrow->target_name).ok());
    const std::vector<float> by_steps = TeacherForced(*m.model, dtype, ids, pool);
    float codec = 0, moved = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
      codec = std::max(codec, std::fabs(by_f32[i] - exact[i]));
      moved = std::max(moved, std::fabs(by_steps[i] - by_f32[i]));
    }
    std::printf(
        "  KV %-8s max |logit - f32 KV logit| %.4f with f32 attention steps (%s); the steps of "
        "%s move them by at most %.4f\n",
        std::string(KvDtypeName(dtype)).c_str(), codec, f32->target_name, narrow->target_name,
        moved);
    EXPECT_GT(codec, 0.0f);
    EXPECT_LE(moved, 0.25f * codec) << KvDtypeName(dtype);
  }
}

// fp8 KV through the bf16 dot products (attention_bf16.h, the default attention kernel where the
// CPU has AVX512_BF16).
TEST(ArchitectureE2eTest, Bf16AttentionStepsMoveLogitsLittleNextToFp8Itself) {
  const KvDtype dtypes[] = {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2};
  ExpectStepsMoveLogitsLittle(&AttentionKernels::fp8_bf16, dtypes);
}

// int4 K's scores through int8 dot products (attention_int4.h, the default attention kernel where
// the CPU has AVX-512 VNNI).
TEST(ArchitectureE2eTest, Int8ScoresMoveLogitsLittleNextToInt4Itself) {
  const KvDtype dtypes[] = {KvDtype::kInt4};
  ExpectStepsMoveLogitsLittle(&AttentionKernels::int4_int8, dtypes);
}

TEST(ArchitectureE2eTest, MixedBatchEqualsOneAtATime) {
  ThreadPool pool(2);
  const auto a = ArchPrompt(70, 1), b = ArchPrompt(45, 2);
  for (const char* preset : kPresets) {
    SCOPED_TRACE(preset);
    auto model = Synthetic(preset, "f16");
    auto kv = Kv(*model, KvDtype::kInt8, 16);
    ASSERT_TRUE(kv->AddSequence(1).ok() && kv->AddSequence(2).ok());
    ASSERT_TRUE(kv->Append(1, a).ok && kv->Append(2, b).ok);
    const SeqChunk both[] = {{1, 0, a, true}, {2, 0, b, true}};
    ForwardOutput batched;
    ASSERT_TRUE(model->Forward(both, *kv, pool, &batched).ok());
    auto kv_single = Kv(*model, KvDtype::kInt8, 16);
    ASSERT_TRUE(kv_single->AddSequence(2).ok());
    ASSERT_TRUE(kv_single->Append(2, b).ok);
    const SeqChunk only_b[] = {{2, 0, b, true}};
    ForwardOutput single;
    ASSERT_TRUE(model->Forward(only_b, *kv_single, pool, &single).ok());
    for (int64_t i = 0; i < int64_t(b.size()); ++i) {
      for (int64_t v = 0; v < single.n_vocab; ++v) {
        ASSERT_EQ(batched.Row(1, i)[v], single.Row(0, i)[v]) << "row " << i;
      }
    }
  }
}

// The block-quantized weight types, each on every preset.
constexpr const char* kBlockWeightTypes[] = {"q4_0", "q4_1", "q5_0", "q5_1",
                                             "q4_K", "q5_K", "q6_K"};

// Largest |logit - the f32-weights model's logit| over 40 teacher-forced positions (f32 KV), per
// block type, over the six presets (logits reach |2-3|). Measured maxima: q4_0 0.89, q4_1 0.86,
// q4_K 0.59, q5_0 0.40, q5_1 0.42, q5_K 0.37, q6_K 0.16 (4-bit codes err ~6% of a weight, 5-bit
// ~3%, 6-bit ~1.5%). Budgets per code width are about 1.5-2x those: the runs are deterministic,
// and a quantizer or decoder off by a code, a nibble or a scale errs by the logits' own size.
float WeightBudget(const std::string& weight_type) {
  if (weight_type == "q6_K") return 0.3f;
  if (weight_type == "q5_0" || weight_type == "q5_1" || weight_type == "q5_K") return 0.65f;
  return 1.3f;  // q4_0, q4_1, q4_K.
}

TEST(ArchitectureE2eTest, BlockWeightTypesPagedEqualsContiguousAndBatchEqualsAlone) {
  ThreadPool pool(2);
  const auto prompt = ArchPrompt(70);  // Past both windows (32, 64) before decoding starts.
  const auto a = ArchPrompt(21, 1), b = ArchPrompt(13, 2);  // Short: 42 models to run.
  for (size_t pi = 0; pi < std::size(kPresets); ++pi) {
    for (size_t ti = 0; ti < std::size(kBlockWeightTypes); ++ti) {
      const std::string preset = kPresets[pi], wt = kBlockWeightTypes[ti];
      // The KV dtype turns with the pair, so each preset and each weight type meets several.
      const KvDtype dtype = kAllKvDtypes[(pi + ti) % std::size(kAllKvDtypes)];
      SCOPED_TRACE(preset + " " + wt + " KV " + std::string(KvDtypeName(dtype)));
      auto model = Synthetic(preset, wt, IsKQuant(wt));
      GenerateResult paged;
      ASSERT_NO_FATAL_FAILURE(ExpectPagedEqualsContiguous(*model, dtype, prompt, 8, pool, &paged));

      // Sequences a and b in one forward pass; b alone: the same logits, bit for bit.
      auto kv = Kv(*model, dtype, 16);
      ASSERT_TRUE(kv->AddSequence(1).ok() && kv->AddSequence(2).ok());
      ASSERT_TRUE(kv->Append(1, a).ok && kv->Append(2, b).ok);
      const SeqChunk both[] = {{1, 0, a, true}, {2, 0, b, true}};
      ForwardOutput batched;
      ASSERT_TRUE(model->Forward(both, *kv, pool, &batched).ok());
      auto kv_single = Kv(*model, dtype, 16);
      ASSERT_TRUE(kv_single->AddSequence(2).ok());
      ASSERT_TRUE(kv_single->Append(2, b).ok);
      const SeqChunk only_b[] = {{2, 0, b, true}};
      ForwardOutput single;
      ASSERT_TRUE(model->Forward(only_b, *kv_single, pool, &single).ok());
      for (int64_t i = 0; i < int64_t(b.size()); ++i) {
        for (int64_t v = 0; v < single.n_vocab; ++v) {
          ASSERT_EQ(batched.Row(1, i)[v], single.Row(0, i)[v]) << "row " << i;
        }
      }
    }
  }
}

TEST(ArchitectureE2eTest, BlockWeightTypesStayNearF32Weights) {
  ThreadPool pool(2);
  const auto ids = ArchPrompt(40, 4);
  std::map<std::string, float> worst;
  for (const char* preset : kPresets) {
    for (const std::string wt : kBlockWeightTypes) {
      SCOPED_TRACE(std::string(preset) + " " + wt);
      // The same shape in f32: the same random values before quantization.
      auto ref_model = Synthetic(preset, "f32", IsKQuant(wt));
      auto model = Synthetic(preset, wt, IsKQuant(wt));
      const std::vector<float> ref = TeacherForced(*ref_model, KvDtype::kF32, ids, pool);
      const std::vector<float> got = TeacherForced(*model, KvDtype::kF32, ids, pool);
      ASSERT_EQ(got.size(), ref.size());
      float max_err = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        max_err = std::max(max_err, std::fabs(got[i] - ref[i]));
      }
      EXPECT_LE(max_err, WeightBudget(wt));
      worst[wt] = std::max(worst[wt], max_err);
    }
  }
  for (const std::string wt : kBlockWeightTypes) {
    std::printf("  %-5s weights: max |logit - f32 weights' logit| %.4f (budget %.4f)\n", wt.c_str(),
                worst[wt], WeightBudget(wt));
  }
}

// The hybrid case: the windowed group's blocks in use stay at what the window spans while the
// full group's grow with the sequence.
TEST(ArchitectureE2eTest, WindowedLayersKvStaysBounded) {
  ThreadPool pool(2);
  for (const char* preset : {"mistral-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    SCOPED_TRACE(preset);
    auto model = Synthetic(preset, "f32");
    const ModelConfig& c = model->config();
    const int block = 16;
    auto kv = testing::MakeKv(*model, KvDtype::kF16, 512, block, /*prefix=*/false, 128);
    int windowed = -1, full = -1;
    for (int g = 0; g < kv->num_groups(); ++g) {
      (kv->group(g).spec().windowed() ? windowed : full) = g;
    }
    ASSERT_GE(windowed, 0);
    int32_t max_windowed = 0, max_full = 0;
    GenerateOptions o = testing::GreedyOptions(260);
    o.prefill_chunk = 16;
    auto r = Generate(*model, *kv, pool, 1, ArchPrompt(40), o, [&](int32_t) {
      const KvStats s = kv->Stats();
      max_windowed = std::max(max_windowed, s.groups[size_t(windowed)].used_blocks);
      if (full >= 0) max_full = std::max(max_full, s.groups[size_t(full)].used_blocks);
      return true;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // A window of W tokens touches at most ceil(W / block) + 1 blocks (the oldest partly).
    EXPECT_LE(max_windowed, (c.sliding_window + block - 1) / block + 1);
    if (full >= 0) {
      EXPECT_EQ(max_full, (40 + 260 - 1 + block - 1) / block);
    }
  }
}

}  // namespace
}  // namespace kvengine
