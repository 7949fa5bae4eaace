// The fused decode-attention kernel on every compiled Highway target against the scalar reference
// kernel and against ContiguousAttentionRef, over synthetic paged KV: every dtype, GQA groups 1 / 4
// / MQA, head dims 64 / 128 / 40, windows with sinks, block sizes 1 / 16 / 32 / 256 and the
// contiguous layout, contexts over several partitions; plus batch invariance (thread count,
// batch composition), paged vs contiguous layout and the prefetch level, bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cmath>
#include <iostream>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention/attention_bf16.h"
#include "kernels/attention/attention_int16.h"
#include "kernels/attention/attention_int4.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_kernel_test_util.h"
#include "kernels/attention/attention_test_util.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace kvengine {
namespace {

using namespace attention_test;  // NOLINT(build/namespaces): the shared test fixtures.

// |simd - reference| <= tolerance * max|v| (outputs are convex combinations of V rows). Both sides
// decode identically; they differ by float vs double dot products and sums, the vector exp and the
// chunked online softmax. Measured worst case over these tests: 2.2e-6; the budget leaves room
// for float sums over longer contexts.
constexpr float kSimdVsReferenceTolerance = 2e-5f;
// The kernels with int16 steps (AVX3_VNNI, AVX3_I16, AVX2_I16) on int8 KV (attention_int16.h)
// also round q to int16 per head (relative error <= 1.5e-5 of amax(q), which moves scores by up to
// ~1e-5 * |q| * |k|) and the chunk's folded V weights p_t * v_scale_t to int16 (absolute error <=
// 1.5e-5 of the chunk's largest): over a chunk of 64 rows at most 64 * 0.5 / 32767 = 9.8e-4 of
// max|v| where one weight dominates, about 1e-4 where the rounding errors are independent. The
// steps give the same bits on every CPU (attention_int16_test.cc). Measured worst case over these
// tests: 1.74e-4 (group 12, d = 128, chunks of 64; 8.4e-5 before that configuration was added).
constexpr float kInt16Int8VsReferenceTolerance = 3e-4f;
// The kernels with bf16 steps (the "_BF16" ones) on fp8 KV (attention_bf16.h) round the folded V
// weights p_t * v_scale_t to bf16 (relative error <= 2^-9: at most 2^-9 = 1.95e-3 of max|v|,
// reached where one position dominates) and q (moving a score by up to 2^-9 * scale * sum|q k|:
// about 1e-3 in these tests' logits, 1e-2 on their outlier K rows, x 8, and a relative error of
// that size in the weights). Measured worst case over these tests: 1.09e-2, which the test
// Bf16StepsCostLittleNextToFp8Itself puts beside fp8's own error (0.12 e4m3, 0.26 e5m2).
constexpr float kBf16Fp8VsReferenceTolerance = 2e-2f;

// The kernels with int8 score steps for int4 K (the "_VNNI" ones, attention_int4.h) round q to
// int8 per head (half a step of amax(q) / 127 per element), which moves a score by up to about
// amax(q) / 254 * sum|k| x the softmax scale: a few thousandths in these tests' logits and eight
// times that on their outlier K rows, and a relative error of that size in the weights. Measured
// worst case over these tests: 3.4e-2, which Int8StepsCostLittleNextToInt4Itself puts beside
// int4's own error (0.37).
constexpr float kInt8Int4VsReferenceTolerance = 6e-2f;

bool IsInt8Int4(const AttentionKernels& k, const KvLayerView& kv) {
  return k.int4_int8 && Int4Int8Applies(kv);
}

bool IsInt16Int8(const AttentionKernels& k, KvDtype dtype) {
  return dtype == KvDtype::kInt8 && k.int8_int16;
}

bool IsBf16Fp8(const AttentionKernels& k, const KvLayerView& kv) {
  return k.fp8_bf16 && Fp8Bf16Applies(kv);
}

float MaxAbs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Worst |simd - ref| / max|v| of the int16 int8 steps, over all tests (printed by the tests).
float int16_worst = 0;
// The same for the bf16 steps of fp8 KV ...
float bf16_worst = 0;
// ... and for the int8 score steps of int4 K.
float int4_worst = 0;

void CheckConfig(const std::vector<AttentionKernels>& targets, const Config& c, float* worst) {
  SCOPED_TRACE(Describe(c));
  const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 11);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::vector<int64_t> positions = PositionsOf(c);
  const size_t qn = size_t(c.n_heads) * size_t(c.head_dim);
  std::vector<float> q(positions.size() * qn);
  for (float& x : q) x = nd(rng);
  const float tol = kSimdVsReferenceTolerance * MaxAbs(kv.v);
  const std::vector<float> want = RunBatch(ReferenceAttentionKernels(), kv, c, q, nullptr);
  // The reference kernel against the plain contiguous yardstick.
  std::vector<float> contiguous(qn);
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  for (size_t i = 0; i < positions.size(); ++i) {
    ContiguousAttentionRef(kv.view, kv.k.data(), kv.v.data(), q.data() + i * qn, c.n_heads,
                           positions[i], scale, contiguous.data());
    for (size_t j = 0; j < qn; ++j) {
      ASSERT_NEAR(want[i * qn + j], contiguous[j], tol) << "ref kernel, pos " << positions[i];
    }
  }
  for (const AttentionKernels& k : targets) {
    const std::vector<float> got = RunBatch(k, kv, c, q, nullptr);
    const bool int16 = IsInt16Int8(k, c.dtype) && c.v_dtype.value_or(c.dtype) == c.dtype;
    const bool bf16 = IsBf16Fp8(k, kv.view);
    const bool int4 = IsInt8Int4(k, kv.view);
    const float target_tol = int16  ? kInt16Int8VsReferenceTolerance * MaxAbs(kv.v)
                             : bf16 ? kBf16Fp8VsReferenceTolerance * MaxAbs(kv.v)
                             : int4 ? kInt8Int4VsReferenceTolerance * MaxAbs(kv.v)
                                    : tol;
    float* worst_of_kind = int16 ? &int16_worst : bf16 ? &bf16_worst : int4 ? &int4_worst : worst;
    for (size_t j = 0; j < got.size(); ++j) {
      const float err = std::fabs(got[j] - want[j]);
      *worst_of_kind = std::max(*worst_of_kind, err / MaxAbs(kv.v));
      ASSERT_LE(err, target_tol) << k.target_name << " output " << j << " got " << got[j]
                                 << " want " << want[j];
    }
  }
}

// ForceAttentionKernels picks any kernel by name, case-insensitive, leaves the choice alone on an
// unknown name (naming the ones there are), and "auto" brings back the best.
TEST(AttentionKernelTest, ForceAttentionKernelsChoosesByName) {
  const std::string best = DefaultAttentionKernels().target_name;
  for (const AttentionKernels& k : AvailableAttentionKernels()) {
    std::string lower = k.target_name;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(ForceAttentionKernels(lower).ok()) << lower;
    EXPECT_STREQ(DefaultAttentionKernels().target_name, k.target_name);
  }
  ASSERT_TRUE(ForceAttentionKernels("ref").ok());
  EXPECT_STREQ(DefaultAttentionKernels().target_name, "ref");
  const Status bad = ForceAttentionKernels("AVX9000");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("AVX9000"), std::string::npos);
  EXPECT_NE(bad.ToString().find(best), std::string::npos);
  EXPECT_STREQ(DefaultAttentionKernels().target_name, "ref");  // Unchanged.
  ASSERT_TRUE(ForceAttentionKernels("auto").ok());
  EXPECT_EQ(DefaultAttentionKernels().target_name, best);
}

TEST(AttentionKernelTest, ListsTargets) {
  std::cout << "attention targets:";
  for (const AttentionKernels& k : AvailableAttentionKernels()) std::cout << " " << k.target_name;
  std::cout << " (default " << DefaultAttentionKernels().target_name << ")\n";
}

// Which arithmetic each kernel reports: int16 only for int8 K and V on the int16 kernels, bf16
// only for fp8 on the _BF16 ones, where the head dims allow it; the default kernel has the int16
// steps wherever this CPU runs AVX2, and the bf16 steps wherever it runs them.
TEST(AttentionKernelTest, ReportsItsArithmetic) {
  KvShape s;
  s.k_dtype = s.v_dtype = KvDtype::kInt8;
  const KvLayerView int8_64 = attention_test::LayoutOf(s);
  s.head_dim_k = s.head_dim_v = 40;
  const KvLayerView int8_40 = attention_test::LayoutOf(s);
  s.k_dtype = s.v_dtype = KvDtype::kF16;
  s.head_dim_k = s.head_dim_v = 64;
  const KvLayerView f16_64 = attention_test::LayoutOf(s);
  s.k_dtype = s.v_dtype = KvDtype::kFp8E4M3;
  const KvLayerView fp8_64 = attention_test::LayoutOf(s);
  s.head_dim_k = s.head_dim_v = 40;
  const KvLayerView fp8_40 = attention_test::LayoutOf(s);
  s.k_dtype = s.v_dtype = KvDtype::kInt4;
  s.head_dim_k = s.head_dim_v = 64;
  const KvLayerView int4_64 = attention_test::LayoutOf(s);
  s.v_dtype = KvDtype::kF16;
  const KvLayerView int4_f16 = attention_test::LayoutOf(s);
  for (const AttentionKernels& k : AvailableAttentionKernels()) {
    SCOPED_TRACE(k.target_name);
    EXPECT_STREQ(AttentionArithmetic(k, int8_64), k.int8_int16 ? "int16" : "f32");
    EXPECT_STREQ(AttentionArithmetic(k, int8_40), "f32");
    EXPECT_STREQ(AttentionArithmetic(k, f16_64), "f32");
    EXPECT_STREQ(AttentionArithmetic(k, fp8_64), k.fp8_bf16 ? "bf16" : "f32");
    EXPECT_STREQ(AttentionArithmetic(k, fp8_40), "f32");
    EXPECT_STREQ(AttentionArithmetic(k, int4_64), k.int4_int8 ? "int8+int16" : "f32");
    EXPECT_STREQ(AttentionArithmetic(k, int4_f16), k.int4_int8 ? "int8+f32" : "f32");
  }
  EXPECT_STREQ(AttentionArithmetic(ReferenceAttentionKernels(), int8_64), "f32");
  if (Int8StepsAvx2() != nullptr) {
    EXPECT_TRUE(DefaultAttentionKernels().int8_int16);
  }
  EXPECT_EQ(DefaultAttentionKernels().fp8_bf16, Fp8StepsAvx512Bf16(KvDtype::kFp8E4M3) != nullptr);
  EXPECT_EQ(DefaultAttentionKernels().int4_int8, Int4StepsAvx512Vnni(false) != nullptr);
}

TEST(AttentionKernelTest, EveryDtypeAndShapeOnEveryTarget) {
  const std::vector<AttentionKernels> targets = AvailableAttentionKernels();
  float worst = 0;
  for (KvDtype d : kAllKvDtypes) {
    CheckConfig(targets, {d, 8, 2, 128, 16, 97}, &worst);   // GQA 4, partial chunks.
    CheckConfig(targets, {d, 2, 2, 64, 32, 70}, &worst);    // MHA.
    CheckConfig(targets, {d, 8, 1, 40, 1, 45}, &worst);     // MQA, ragged head dim, block 1.
    CheckConfig(targets, {d, 6, 1, 80, 256, 300}, &worst);  // Group 6: head tiles of 4 + 2.
    // Groups of 8 (one wide tile on AVX-512, 4 + 4 elsewhere), 12 (8 + 4) and 16 (8 + 8).
    CheckConfig(targets, {d, 32, 4, 64, 16, 131}, &worst);
    CheckConfig(targets, {d, 12, 1, 128, 16, 77}, &worst);
    CheckConfig(targets, {d, 16, 1, 64, 32, 66}, &worst);
  }
  std::cout << "worst |simd - ref| / max|v|: " << worst << " (int8 int16 steps: " << int16_worst
            << ", fp8 bf16 steps: " << bf16_worst << ", int4 int8 scores: " << int4_worst << ")\n";
}

// K and V in different dtypes: each of the fused int4 decoder's element orders (q permuted for
// the scores, the value accumulators un-permuted) on its own, and the tile paths beside fused
// ones.
TEST(AttentionKernelTest, MixedKAndVDtypes) {
  const std::vector<AttentionKernels> targets = AvailableAttentionKernels();
  float worst = 0;
  for (const auto& [k, v] :
       {std::pair{KvDtype::kInt4, KvDtype::kF16}, std::pair{KvDtype::kF16, KvDtype::kInt4},
        std::pair{KvDtype::kInt8, KvDtype::kInt4}, std::pair{KvDtype::kInt4, KvDtype::kFp8E4M3}}) {
    CheckConfig(targets, {k, 8, 2, 128, 16, 97, 0, 0, v}, &worst);
    CheckConfig(targets, {k, 6, 1, 96, 32, 150, 0, 0, v}, &worst);  // 3 int4 groups per row.
    CheckConfig(targets, {k, 4, 2, 40, 16, 50, 0, 0, v}, &worst);   // int4 through the tiles.
    CheckConfig(targets, {k, 8, 1, 64, 16, 70, 0, 0, v}, &worst);   // The 8-head tile.
  }
  std::cout << "worst |simd - ref| / max|v|: " << worst << " (int4 int8 scores: " << int4_worst
            << ")\n";
}

TEST(AttentionKernelTest, WindowsSinksAndLayouts) {
  const std::vector<AttentionKernels> targets = AvailableAttentionKernels();
  float worst = 0;
  for (KvDtype d : {KvDtype::kF16, KvDtype::kInt8, KvDtype::kInt4}) {
    CheckConfig(targets, {d, 4, 1, 64, 16, 600, 100, 4}, &worst);
    CheckConfig(targets, {d, 4, 2, 64, 1, 90, 7, 3}, &worst);
    CheckConfig(targets, {d, 4, 2, 64, 32768, 700, 0, 0}, &worst);  // Contiguous: one block.
    CheckConfig(targets, {d, 4, 2, 64, 32768, 700, 50, 2}, &worst);
  }
  std::cout << "worst |simd - ref| / max|v|: " << worst << " (int8 int16 steps: " << int16_worst
            << ", fp8 bf16 steps: " << bf16_worst << ", int4 int8 scores: " << int4_worst << ")\n";
}

// Worst |error| / max|v| over `configs` (normal(0, 1) queries), against attention over the
// unquantized KV (f32 rows of the same values; FillKv draws them whatever the dtype): the codec's,
// the f32 reference on the configs' KV; and the steps', `kernels` against that reference.
struct CodecAndStepsErrors {
  float codec = 0, steps = 0;
};
CodecAndStepsErrors ErrorsNextToUnquantized(const AttentionKernels& kernels,
                                            std::span<const Config> configs) {
  CodecAndStepsErrors e;
  for (const Config& c : configs) {
    SCOPED_TRACE(Describe(c));
    const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 11);
    Config exact = c;
    exact.dtype = KvDtype::kF32;
    exact.v_dtype = std::nullopt;
    const OwnedKv truth = MakeKv(ShapeOf(exact), c.tokens, 11);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> q(PositionsOf(c).size() * size_t(c.n_heads) * size_t(c.head_dim));
    for (float& x : q) x = nd(rng);
    const std::vector<float> want = RunBatch(ReferenceAttentionKernels(), truth, exact, q, nullptr);
    const std::vector<float> ref = RunBatch(ReferenceAttentionKernels(), kv, c, q, nullptr);
    const std::vector<float> got = RunBatch(kernels, kv, c, q, nullptr);
    for (size_t j = 0; j < want.size(); ++j) {
      e.codec = std::max(e.codec, std::fabs(ref[j] - want[j]) / MaxAbs(truth.v));
      e.steps = std::max(e.steps, std::fabs(got[j] - ref[j]) / MaxAbs(truth.v));
    }
  }
  return e;
}

// The first kernel with `steps` (its flag in AttentionKernels), or nullptr.
const AttentionKernels* FirstWith(const std::vector<AttentionKernels>& all,
                                  bool AttentionKernels::*steps) {
  for (const AttentionKernels& k : all) {
    if (k.*steps) return &k;
  }
  return nullptr;
}

// What the bf16 steps cost next to fp8 itself: the f32 reference on fp8 KV errs by the codec's
// rounding (2^-4 or 2^-3 per element) and the bf16 steps add their own (2^-9 per q element and
// weight). Each fp8 format's shapes: the test data's outlier K rows (x8) give large logits, where
// rounding q matters most.
TEST(AttentionKernelTest, Bf16StepsCostLittleNextToFp8Itself) {
  const std::vector<AttentionKernels> all = AvailableAttentionKernels();
  const AttentionKernels* bf16 = FirstWith(all, &AttentionKernels::fp8_bf16);
  if (bf16 == nullptr) GTEST_SKIP() << "no kernel with bf16 steps on this CPU";
  for (KvDtype dtype : {KvDtype::kFp8E4M3, KvDtype::kFp8E5M2}) {
    const Config configs[] = {
        {dtype, 8, 2, 128, 16, 97}, {dtype, 32, 4, 64, 16, 131}, {dtype, 12, 1, 128, 16, 300}};
    const CodecAndStepsErrors e = ErrorsNextToUnquantized(*bf16, configs);
    std::cout << KvDtypeName(dtype) << ": worst |error| / max|v| of f32 steps on fp8 KV " << e.codec
              << ", bf16 steps' own " << e.steps << "\n";
    EXPECT_LE(e.steps, 0.25f * e.codec) << KvDtypeName(dtype);
  }
}

// What the int4 integer steps cost next to int4 itself: the f32 reference on int4 KV errs by the
// codec's rounding (half a step of a group's range / 15 per element) and the steps add q's (half
// a step of amax(q) / 127) and the V weights' (int16). int4 K with f16 V and int4 V.
TEST(AttentionKernelTest, Int8StepsCostLittleNextToInt4Itself) {
  const std::vector<AttentionKernels> all = AvailableAttentionKernels();
  const AttentionKernels* int4 = FirstWith(all, &AttentionKernels::int4_int8);
  if (int4 == nullptr) GTEST_SKIP() << "no kernel with int8 score steps on this CPU";
  for (KvDtype v_dtype : {KvDtype::kF16, KvDtype::kInt4}) {
    Config configs[] = {{KvDtype::kInt4, 8, 2, 128, 16, 97},
                        {KvDtype::kInt4, 32, 4, 64, 16, 131},
                        {KvDtype::kInt4, 12, 1, 128, 16, 300}};
    for (Config& c : configs) c.v_dtype = v_dtype;
    const CodecAndStepsErrors e = ErrorsNextToUnquantized(*int4, configs);
    std::cout << "int4 K, " << KvDtypeName(v_dtype)
              << " V: worst |error| / max|v| of f32 steps on int4 KV " << e.codec
              << ", integer steps' own " << e.steps << "\n";
    EXPECT_LE(e.steps, 0.25f * e.codec) << KvDtypeName(v_dtype);
  }
}

TEST(AttentionKernelTest, LongContextsCrossPartitions) {
  // The best target only (the others run the same planning and merge code).
  const std::vector<AttentionKernels> best = {DefaultAttentionKernels()};
  float worst = 0;
  for (KvDtype d : {KvDtype::kF16, KvDtype::kInt8}) {
    CheckConfig(best, {d, 4, 1, 128, 16, 5000}, &worst);
  }
  CheckConfig(best, {KvDtype::kFp8E4M3, 4, 1, 64, 32, 5000, 3000, 4}, &worst);
  CheckConfig(best, {KvDtype::kF32, 2, 1, 64, 32768, 4500, 2100, 0}, &worst);
  std::cout << "worst |simd - ref| / max|v|: " << worst << " (int8 int16 steps: " << int16_worst
            << ", fp8 bf16 steps: " << bf16_worst << ", int4 int8 scores: " << int4_worst << ")\n";
}
}  // namespace
}  // namespace kvengine
