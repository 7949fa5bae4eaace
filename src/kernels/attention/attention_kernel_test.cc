// The fused decode-attention kernel on every compiled Highway target against the scalar reference
// kernel and against ContiguousAttentionRef, over synthetic paged KV: every dtype, GQA groups 1 / 4
// / MQA, head dims 64 / 128 / 40, windows with sinks, block sizes 1 / 16 / 32 / 256 and the
// contiguous layout, contexts over several partitions; plus batch invariance (thread count,
// batch composition), paged vs contiguous layout and the prefetch level, bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <bit>
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
#include "kernels/attention/attention_test_util.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace kvengine {
namespace {

using attention_test::KvShape;
using attention_test::MakeKv;
using attention_test::OwnedKv;

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

struct Config {
  KvDtype dtype;
  int n_heads, n_kv, head_dim, block_size;
  int64_t tokens;
  int window = 0, sinks = 0;
  std::optional<KvDtype> v_dtype = std::nullopt;  // V's dtype where it differs from K's (`dtype`).
};

std::string Describe(const Config& c) {
  return std::string(KvDtypeName(c.dtype)) +
         (c.v_dtype ? "/" + std::string(KvDtypeName(*c.v_dtype)) : std::string()) +
         " H=" + std::to_string(c.n_heads) + " Hkv=" + std::to_string(c.n_kv) +
         " d=" + std::to_string(c.head_dim) + " B=" + std::to_string(c.block_size) +
         " T=" + std::to_string(c.tokens) + " W=" + std::to_string(c.window) +
         " S=" + std::to_string(c.sinks);
}

KvShape ShapeOf(const Config& c) {
  KvShape s;
  s.k_dtype = c.dtype;
  s.v_dtype = c.v_dtype.value_or(c.dtype);
  s.num_kv_heads = c.n_kv;
  s.head_dim_k = s.head_dim_v = c.head_dim;
  s.block_size = c.block_size;
  s.window = c.window;
  s.sink_tokens = c.sinks;
  return s;
}

// Query positions to check: the first, one inside, the last.
std::vector<int64_t> PositionsOf(const Config& c) { return {0, c.tokens / 2 + 3, c.tokens - 1}; }

float MaxAbs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Runs every position of `c` through `kernels` (one batch) and returns the outputs.
std::vector<float> RunBatch(const AttentionKernels& kernels, const OwnedKv& kv, const Config& c,
                            const std::vector<float>& q, ThreadPool* pool) {
  const std::vector<int64_t> positions = PositionsOf(c);
  const size_t qn = size_t(c.n_heads) * size_t(c.head_dim);
  std::vector<float> out(positions.size() * qn, NAN);
  std::vector<AttentionQuery> queries;
  for (size_t i = 0; i < positions.size(); ++i) {
    queries.push_back({kv.table, q.data() + i * qn, positions[i], out.data() + i * qn});
  }
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  PagedAttentionBatchWith(kernels, kv.view, queries, c.n_heads, scale, pool);
  return out;
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

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  }
  return true;
}

// Several sequences' decode and prefill-like queries in one batch: 1 thread, 2 threads and each
// query alone give the same bits; so do the paged and the contiguous layout of the same rows.
TEST(AttentionKernelTest, BatchInvarianceAndLayoutInvariance) {
  const int n_heads = 8, n_kv = 2, d = 64;
  for (KvDtype dtype : {KvDtype::kF16, KvDtype::kInt8}) {
    SCOPED_TRACE(std::string(KvDtypeName(dtype)));
    KvShape s;
    s.k_dtype = s.v_dtype = dtype;
    s.num_kv_heads = n_kv;
    s.head_dim_k = s.head_dim_v = d;
    s.block_size = 16;
    const int64_t tokens = 4500;
    const OwnedKv paged = MakeKv(s, tokens, 3);
    s.block_size = 8192;
    const OwnedKv contiguous = MakeKv(s, tokens, 3);  // Same seed: same rows, one block.
    ASSERT_EQ(paged.k, contiguous.k);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const std::vector<int64_t> positions = {4499, 17, 2047, 2048, 4000, 0, 4499, 1000};
    const size_t qn = size_t(n_heads) * d;
    std::vector<float> q(positions.size() * qn);
    for (float& x : q) x = nd(rng);
    const auto run = [&](const OwnedKv& kv, ThreadPool* pool, std::vector<size_t> which) {
      std::vector<float> out(positions.size() * qn, NAN);
      std::vector<AttentionQuery> queries;
      for (size_t i : which) {
        queries.push_back({kv.table, q.data() + i * qn, positions[i], out.data() + i * qn});
      }
      PagedAttentionBatch(kv.view, queries, n_heads, 0.125f, pool);
      return out;
    };
    std::vector<size_t> all(positions.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    ThreadPool two(2);
    const std::vector<float> one_thread = run(paged, nullptr, all);
    EXPECT_TRUE(SameBits(one_thread, run(paged, &two, all)));
    std::vector<float> alone(one_thread.size());
    for (size_t i : all) {
      const std::vector<float> o = run(paged, &two, {i});
      std::copy(o.begin() + long(i * qn), o.begin() + long((i + 1) * qn),
                alone.begin() + long(i * qn));
    }
    EXPECT_TRUE(SameBits(one_thread, alone));
    EXPECT_TRUE(SameBits(one_thread, run(contiguous, &two, all)));
    // PagedAttention (one token) goes the same way.
    std::vector<float> single(qn);
    PagedAttention(paged.view, paged.table, q.data(), n_heads, positions[0], 0.125f, single.data(),
                   nullptr);
    EXPECT_TRUE(
        SameBits(single, std::vector<float>(one_thread.begin(), one_thread.begin() + long(qn))));
  }
}

// N(0, 1) queries for every position RunBatch runs of `c`.
std::vector<float> RandomQueries(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(PositionsOf(c).size() * size_t(c.n_heads) * size_t(c.head_dim));
  for (float& x : q) x = nd(rng);
  return q;
}

// Prefetching into L1 or L2 changes when rows arrive, never what is computed: every target gives
// the same bits with both levels (f16 and int8 paged over several partitions and a window).
TEST(AttentionKernelTest, PrefetchLevelChangesNoBits) {
  for (const Config& c : {Config{KvDtype::kF16, 8, 2, 128, 16, 5000},
                          Config{KvDtype::kInt8, 8, 2, 128, 16, 5000, 3000, 4},
                          Config{KvDtype::kInt4, 4, 1, 64, 32, 700}}) {
    SCOPED_TRACE(Describe(c));
    const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 13);
    const std::vector<float> q = RandomQueries(c, 7);
    for (AttentionKernels k : AvailableAttentionKernels()) {
      SCOPED_TRACE(k.target_name);
      k.prefetch = KvPrefetchLevel::kL1;
      const std::vector<float> l1 = RunBatch(k, kv, c, q, nullptr);
      k.prefetch = KvPrefetchLevel::kL2;
      EXPECT_TRUE(SameBits(l1, RunBatch(k, kv, c, q, nullptr)));
    }
  }
}

// How many KV heads a work item takes changes which thread reads which rows, never what is
// computed: every target gives the same bits with one head per item, ragged runs of heads (3 of
// 8: 3 + 3 + 2), all of them and the plan's own choice, with 1 and 2 threads (f16 and int8 over
// several partitions and a window, int4 through the fused decoder, a ragged head dim through the
// tiles), and the reference kernel agrees with itself the same way.
TEST(AttentionKernelTest, KvHeadsPerItemChangeNoBits) {
  ThreadPool two(2);
  for (const Config& c :
       {Config{KvDtype::kF16, 32, 8, 64, 16, 5000},
        Config{KvDtype::kInt8, 32, 8, 128, 16, 4500, 3000, 4},
        Config{KvDtype::kInt4, 8, 4, 64, 32, 700}, Config{KvDtype::kBF16, 12, 3, 40, 16, 300}}) {
    SCOPED_TRACE(Describe(c));
    const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 17);
    const std::vector<float> q = RandomQueries(c, 3);
    std::vector<AttentionKernels> kernels = AvailableAttentionKernels();
    kernels.push_back(ReferenceAttentionKernels());
    for (AttentionKernels k : kernels) {
      SCOPED_TRACE(k.target_name);
      k.kv_heads_per_item = 1;
      const std::vector<float> one = RunBatch(k, kv, c, q, nullptr);
      for (int heads : {0, 2, 3, c.n_kv}) {
        SCOPED_TRACE(heads);
        k.kv_heads_per_item = heads;
        EXPECT_TRUE(SameBits(one, RunBatch(k, kv, c, q, nullptr)));
        EXPECT_TRUE(SameBits(one, RunBatch(k, kv, c, q, &two)));
      }
    }
  }
}

// The plan's choice (paged_attention.cc): every KV head in one item where a block's per-head
// runs are short, split for threads when the batch has few partitions; one head per item for
// long runs (the contiguous layout) or where asked.
TEST(AttentionKernelTest, PlansKvHeadsPerItem) {
  KvShape s;
  s.k_dtype = s.v_dtype = KvDtype::kF16;
  s.num_kv_heads = 8;
  s.head_dim_k = s.head_dim_v = 128;
  s.block_size = 16;  // Runs of 4 KiB.
  const KvLayerView paged = attention_test::LayoutOf(s);
  s.block_size = 4096;  // Runs of 1 MiB.
  const KvLayerView contiguous = attention_test::LayoutOf(s);
  const std::vector<int32_t> table(4096, 0);
  const auto query = [&](int64_t pos) { return AttentionQuery{table, nullptr, pos, nullptr}; };
  const std::vector<AttentionQuery> long_one = {query(32767)};  // 16 partitions.
  const std::vector<AttentionQuery> short_one = {query(100)};   // 1 partition.
  ThreadPool two(2);
  AttentionKernels k = DefaultAttentionKernels();
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, nullptr), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, short_one, nullptr), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, short_one, &two), 1);  // 8 items for 2 threads.
  EXPECT_EQ(PlannedKvHeadsPerItem(k, contiguous, long_one, nullptr), 1);
  k.kv_heads_per_item = 3;
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 3);
  k.kv_heads_per_item = 100;
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 8);
}

// The default level follows the L1 data cache's size (attention_kernel.h).
// ItemRowWalker::Next in chunks of any size yields the rows (and run starts) that per-position
// address arithmetic gives: K and V data and scales of the item's first KV head, blocks of 1 / 5
// / 16 rows, ranges that start and end mid-block, two ranges. (GCC 12.2 -O3 once miscompiled the
// walk's four running pointer sums into K = V: docs/bench-attention.md, "Where the in-cache
// time goes on AVX2".)
TEST(AttentionKernelTest, RowWalkerYieldsEachPositionsRows) {
  for (const KvDtype dtype : {KvDtype::kF16, KvDtype::kInt8}) {
    for (const int block_size : {1, 5, 16}) {
      KvShape shape;
      shape.k_dtype = shape.v_dtype = dtype;
      shape.num_kv_heads = 3;
      shape.block_size = block_size;
      const OwnedKv kv = MakeKv(shape, 300, 5);
      const KvLayerView& v = kv.view;
      for (const auto& [b0, e0, b1, e1] :
           {std::array<int64_t, 4>{0, 0, 0, 130}, {0, 3, 171, 290}, {37, 101, 0, 0}}) {
        for (const int step : {1, 7, 64}) {
          AttentionItem item;
          item.block_table = kv.table;
          item.kv_head = 2;
          item.begin[0] = b0;
          item.end[0] = e0;
          item.begin[1] = b1;
          item.end[1] = e1;
          std::vector<int64_t> positions;
          for (int64_t t = b0; t < e0; ++t) positions.push_back(t);
          for (int64_t t = b1; t < e1; ++t) positions.push_back(t);
          ItemRowWalker walk(v, item);
          size_t i = 0;
          while (walk.remaining() > 0) {
            const int n = int(std::min<int64_t>(step, walk.remaining()));
            std::vector<KvRowRefs> rows(static_cast<size_t>(n));
            uint64_t starts = 0;
            walk.Next(n, rows.data(), &starts);
            for (int j = 0; j < n; ++j, ++i) {
              const int64_t t = positions[i];
              const uint8_t* block =
                  v.pool + size_t(kv.table[size_t(t / block_size)]) * v.bytes_per_block;
              const size_t row = 2 * size_t(block_size) + size_t(t % block_size);
              const std::string where = "t " + std::to_string(t) + " step " + std::to_string(step) +
                                        " block " + std::to_string(block_size);
              EXPECT_EQ(rows[size_t(j)].k_data, block + v.k_data + row * v.k_row_bytes) << where;
              EXPECT_EQ(rows[size_t(j)].k_scale, block + v.k_scale + row * v.k_scale_bytes)
                  << where;
              EXPECT_EQ(rows[size_t(j)].v_data, block + v.v_data + row * v.v_row_bytes) << where;
              EXPECT_EQ(rows[size_t(j)].v_scale, block + v.v_scale + row * v.v_scale_bytes)
                  << where;
              // A run starts at the chunk's first row and wherever the position does not follow
              // the previous one in its block.
              const bool start = j == 0 || t != positions[i - 1] + 1 ||
                                 t / block_size != positions[i - 1] / block_size;
              EXPECT_EQ(((starts >> j) & 1) != 0, start) << where;
            }
          }
          EXPECT_EQ(i, positions.size());
        }
      }
    }
  }
}

TEST(AttentionKernelTest, DefaultPrefetchLevelFollowsL1Size) {
  const long l1 = L1DataCacheBytes();
  const KvPrefetchLevel want =
      l1 == 0 || l1 >= kL1PrefetchMinBytes ? KvPrefetchLevel::kL1 : KvPrefetchLevel::kL2;
  EXPECT_EQ(DefaultKvPrefetchLevel(), want) << "L1d " << l1 << " bytes";
  EXPECT_EQ(DefaultAttentionKernels().prefetch, want);
  EXPECT_STREQ(KvPrefetchLevelName(KvPrefetchLevel::kL1), "l1");
  EXPECT_STREQ(KvPrefetchLevelName(KvPrefetchLevel::kL2), "l2");
  std::cout << "L1d " << l1 << " bytes: prefetch into " << KvPrefetchLevelName(want) << "\n";
}

}  // namespace
}  // namespace kvengine
