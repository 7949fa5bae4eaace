// The kernel target override: names, aliases, errors, and that it switches every kernel.
#include "kernels/kernel_target.h"

#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <random>
#include <set>

#include "hwy/targets.h"
#include "kernels/kernels_test_util.h"
#include "kernels/matmul.h"
#include "kernels/rope.h"

namespace kvengine {
namespace {

using kernels_test::RandomFloats;
using kernels_test::RandomWeights;
using kernels_test::SameFloat;
using kernels_test::ScopedKernelTarget;

TEST(KernelTargetTest, ListsTargetsBestFirstReferenceLast) {
  const std::vector<std::string> names = AvailableKernelTargets();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names.back(), "ref");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  std::cout << "kernel targets:";
  for (const std::string& n : names) std::cout << " " << n;
  std::cout << " (active " << ActiveKernelTarget() << ")\n";
  const std::vector<KernelTable>& tables = AvailableKernelTables();
  ASSERT_EQ(tables.size(), names.size());
  for (size_t i = 0; i + 1 < tables.size(); ++i) {
    EXPECT_NE(tables[i].hwy_target, 0);
    EXPECT_STREQ(tables[i].target_name, hwy::TargetName(tables[i].hwy_target));
    if (i > 0) {
      EXPECT_GT(tables[i].hwy_target, tables[i - 1].hwy_target) << "not best first";
    }
  }
  for (const KernelTable& t : tables) {
    EXPECT_NE(t.matmul_rows, nullptr);
    EXPECT_NE(t.dequantize_row, nullptr);
    EXPECT_NE(t.rms_norm, nullptr);
    EXPECT_NE(t.softmax, nullptr);
    EXPECT_NE(t.swiglu, nullptr);
    EXPECT_NE(t.add_in_place, nullptr);
    EXPECT_NE(t.exp, nullptr);
    EXPECT_NE(t.rope_apply, nullptr);
  }
}

TEST(KernelTargetTest, ForceByNameAliasesAndAuto) {
  const std::string before = ActiveKernelTarget();
  const std::vector<std::string> names = AvailableKernelTargets();
  for (const std::string& name : names) {
    ASSERT_TRUE(ForceKernelTarget(name).ok()) << name;
    EXPECT_EQ(ActiveKernelTarget(), name);
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(ForceKernelTarget(lower).ok()) << lower;
    EXPECT_EQ(ActiveKernelTarget(), name);
  }
  // The baseline answers to both SCALAR and EMU128, whichever the compiler produced.
  const std::string baseline = names[names.size() - 2];
  ASSERT_TRUE(baseline == "SCALAR" || baseline == "EMU128") << baseline;
  for (const char* alias : {"SCALAR", "emu128"}) {
    ASSERT_TRUE(ForceKernelTarget(alias).ok()) << alias;
    EXPECT_EQ(ActiveKernelTarget(), baseline);
  }
  ASSERT_TRUE(ForceKernelTarget("auto").ok());
  EXPECT_EQ(ActiveKernelTarget(), names.front());
  ASSERT_TRUE(ForceKernelTarget(before).ok());
}

TEST(KernelTargetTest, UnknownNameIsAnErrorListingTargetsAndChangesNothing) {
  ScopedKernelTarget scoped("ref");
  const Status s = ForceKernelTarget("AVX9000");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("AVX9000"), std::string::npos) << s.message();
  for (const std::string& name : AvailableKernelTargets()) {
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
  EXPECT_EQ(ActiveKernelTarget(), "ref");
  EXPECT_FALSE(ForceKernelTarget("").ok());
}

// Forcing a target switches MatMul and RoPE too (vector_ops_test.cc checks the others).
TEST(KernelTargetTest, ForcedTargetDrivesMatMulAndRope) {
  std::mt19937 rng(12);
  const kernels_test::TestWeights w = RandomWeights(rng, GgmlType::kBF16, 9, 45);
  const std::vector<float> x = RandomFloats(rng, 2 * 45);
  const std::vector<float> q = RandomFloats(rng, 2 * 16);
  RopeParams p;
  p.n_rot = 16;
  p.neox = true;
  std::vector<float> cos_sin(16);
  RopeCosSin(77, p, cos_sin.data());
  for (const KernelTable& k : AvailableKernelTables()) {
    ScopedKernelTarget scoped(k.target_name);
    std::vector<float> want(2 * 9);
    std::vector<float> got(2 * 9);
    k.matmul_rows(w.view, x.data(), 2, 0, 9, want.data());
    MatMul(w.view, x.data(), 2, got.data(), nullptr);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(SameFloat(got[i], want[i]));
    std::vector<float> rope_want = q;
    std::vector<float> rope_got = q;
    k.rope_apply(rope_want.data(), 2, 16, 16, true, cos_sin.data());
    Rope(rope_got.data(), 2, 16, 77, p);
    for (size_t i = 0; i < q.size(); ++i) ASSERT_TRUE(SameFloat(rope_got[i], rope_want[i]));
  }
}

}  // namespace
}  // namespace kvengine
