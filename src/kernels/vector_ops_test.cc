// RmsNorm, Softmax, SwiGlu, AddInPlace and the vector exponential: every compiled target against
// the scalar reference (or the exact function) within the budgets of kernel_tolerance.h.
#include "kernels/vector_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel_target.h"
#include "kernels/kernel_tolerance.h"
#include "kernels/kernels_test_util.h"

namespace kvengine {
namespace {

using kernels_test::RandomFloats;
using kernels_test::SameFloat;
using kernels_test::ScopedKernelTarget;

constexpr int64_t kSizes[] = {1, 3, 31, 33, 64, 4096};
constexpr float kInf = std::numeric_limits<float>::infinity();

// Relative error of got vs the exact e^x (computed in double), in units of the bound's terms.
double ExpError(float x, float got) {
  const double exact = std::exp(static_cast<double>(x));
  return std::fabs(static_cast<double>(got) - exact) / (kExpMaxRelError * exact + kExpMaxAbsError);
}

TEST(ExpTest, EveryTargetWithinBudgetOfExactExp) {
  // A dense sweep of the whole finite-result range, subnormal results included.
  std::vector<float> x;
  for (double v = -103.0; v < 88.7; v += 0.00173) x.push_back(static_cast<float>(v));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  for (int i = 0; i < 20000; ++i) x.push_back(small(rng));
  std::vector<float> got(x.size());
  for (const KernelTable& k : AvailableKernelTables()) {
    k.exp(x.data(), static_cast<int64_t>(x.size()), got.data());
    double worst = 0.0;
    double worst_rel_units = 0.0;  // Relative error in units of u, normal results only.
    for (size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, ExpError(x[i], got[i]));
      const double exact = std::exp(static_cast<double>(x[i]));
      if (exact >= 0x1p-126) {
        worst_rel_units =
            std::max(worst_rel_units, std::fabs(got[i] - exact) / exact / kUnitRoundoff);
      }
      ASSERT_LE(ExpError(x[i], got[i]), 1.0) << k.target_name << " x=" << x[i] << " got " << got[i];
    }
    std::cout << "exp " << k.target_name << ": max relative error " << worst_rel_units
              << " u (budget " << kExpMaxRelError / kUnitRoundoff << " u)\n";
  }
}

// AVX3 scales by 2^n with one vscalefps, AVX2 with two multiplies by powers of two; everything
// else is the same arithmetic (FMA on both), so the bits must agree, subnormal results included.
TEST(ExpTest, Avx3ScalingGivesTheBitsOfTheTwoStepScaling) {
  std::vector<float> x;
  for (double v = -105.0; v < 90.0; v += 0.000731) x.push_back(static_cast<float>(v));
  const KernelTable* avx3 = nullptr;
  const KernelTable* avx2 = nullptr;
  const std::vector<KernelTable> tables = AvailableKernelTables();
  for (const KernelTable& k : tables) {
    if (std::string(k.target_name) == "AVX3") avx3 = &k;
    if (std::string(k.target_name) == "AVX2") avx2 = &k;
  }
  if (avx3 == nullptr || avx2 == nullptr) GTEST_SKIP() << "needs AVX3 and AVX2";
  std::vector<float> a(x.size()), b(x.size());
  avx3->exp(x.data(), static_cast<int64_t>(x.size()), a.data());
  avx2->exp(x.data(), static_cast<int64_t>(x.size()), b.data());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << "x=" << x[i];
  }
}

TEST(ExpTest, EveryTargetHandlesSpecialValues) {
  const std::vector<float> x = {0.0f,   -0.0f, 1.0f,    -kInf,   kInf,   std::nanf(""), 89.0f,
                                100.0f, 1e30f, -104.0f, -110.0f, -1e30f, 88.72f,        -87.5f};
  for (const KernelTable& k : AvailableKernelTables()) {
    std::vector<float> got(x.size());
    k.exp(x.data(), static_cast<int64_t>(x.size()), got.data());
    EXPECT_EQ(got[0], 1.0f) << k.target_name;
    EXPECT_EQ(got[1], 1.0f) << k.target_name;
    EXPECT_EQ(got[3], 0.0f) << k.target_name;
    EXPECT_EQ(got[4], kInf) << k.target_name;
    EXPECT_TRUE(std::isnan(got[5])) << k.target_name;
    EXPECT_EQ(got[6], kInf) << k.target_name;
    EXPECT_EQ(got[7], kInf) << k.target_name;
    EXPECT_EQ(got[8], kInf) << k.target_name;
    EXPECT_EQ(got[10], 0.0f) << k.target_name;
    EXPECT_EQ(got[11], 0.0f) << k.target_name;
    EXPECT_LE(ExpError(x[2], got[2]), 1.0) << k.target_name;
    EXPECT_LE(ExpError(x[12], got[12]), 1.0) << k.target_name;
    EXPECT_LE(ExpError(x[13], got[13]), 1.0) << k.target_name;
  }
}

// The softmax's exponential: within Exp's error budget of the exact e^x on [-88, 0] (results
// below 2^-126 may be +0), +0 at and past -88 and at -inf, NaN stays NaN, e^0 = 1 exactly.
TEST(ExpTest, NonPositiveWithinBudgetOrZero) {
  std::vector<float> x;
  for (double v = -90.0; v <= 0.0; v += 0.000917) x.push_back(static_cast<float>(v));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-1.0f, 0.0f);
  for (int i = 0; i < 20000; ++i) x.push_back(small(rng));
  const std::vector<float> special = {0.0f, -0.0f, -kInf, std::nanf(""), -88.0f, -1e30f};
  x.insert(x.end(), special.begin(), special.end());
  for (const KernelTable& k : AvailableKernelTables()) {
    std::vector<float> got(x.size());
    k.exp_non_positive(x.data(), static_cast<int64_t>(x.size()), got.data());
    const bool simd = k.target_name != std::string("ref");
    double worst_rel_units = 0.0;  // Normal results.
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << k.target_name;
        continue;
      }
      const double exact = std::exp(static_cast<double>(x[i]));
      if (simd && x[i] <= -88.0f) {
        ASSERT_EQ(got[i], 0.0f) << k.target_name << " x=" << x[i];
      } else if (exact < 0x1p-126) {
        ASSERT_TRUE(got[i] == 0.0f || ExpError(x[i], got[i]) <= 1.0)
            << k.target_name << " x=" << x[i] << " got " << got[i];
      } else {
        ASSERT_LE(ExpError(x[i], got[i]), 1.0)
            << k.target_name << " x=" << x[i] << " got " << got[i];
        worst_rel_units =
            std::max(worst_rel_units, std::fabs(got[i] - exact) / exact / kUnitRoundoff);
      }
    }
    EXPECT_EQ(got[x.size() - special.size()], 1.0f) << k.target_name;
    EXPECT_EQ(got[x.size() - special.size() + 1], 1.0f) << k.target_name;
    std::cout << "exp_non_positive " << k.target_name << ": max relative error " << worst_rel_units
              << " u\n";
  }
}

TEST(RmsNormTest, EveryTargetWithinBudget) {
  std::mt19937 rng(1);
  const KernelTable& ref = ReferenceKernelTable();
  for (int64_t n : kSizes) {
    const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n), 3.0f);
    const std::vector<float> w = RandomFloats(rng, static_cast<size_t>(n));
    for (const float* weight : {w.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> want(static_cast<size_t>(n));
      ref.rms_norm(x.data(), weight, n, 1e-5f, want.data());
      const double rel =
          kRmsNormRelTolerancePerElement * static_cast<double>(n) + kRmsNormRelToleranceBase;
      for (const KernelTable& k : AvailableKernelTables()) {
        std::vector<float> got(static_cast<size_t>(n) + 1, -1.0f);
        k.rms_norm(x.data(), weight, n, 1e-5f, got.data());
        EXPECT_EQ(got.back(), -1.0f) << "wrote past n";
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_LE(std::fabs(got[i] - want[i]), rel * std::fabs(want[i]))
              << k.target_name << " n=" << n << " i=" << i << " weights=" << (weight != nullptr);
        }
        // In place gives the same bits.
        std::vector<float> inplace = x;
        k.rms_norm(inplace.data(), weight, n, 1e-5f, inplace.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(inplace[i], got[i]));
      }
    }
  }
}

TEST(SoftmaxTest, EveryTargetWithinBudgetAndSumsToOne) {
  std::mt19937 rng(2);
  const KernelTable& ref = ReferenceKernelTable();
  for (int64_t n : kSizes) {
    std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n), 6.0f);
    if (n >= 3) {  // Masked entries, as causal attention writes them.
      x[1] = -kInf;
      x[static_cast<size_t>(n) - 1] = -kInf;
    }
    x[0] += 40.0f;  // A dominant entry: most others underflow towards 0 or the subnormals.
    std::vector<float> want = x;
    ref.softmax(want.data(), n);
    const double rel =
        kSoftmaxRelTolerancePerElement * static_cast<double>(n) + kSoftmaxRelToleranceBase;
    for (const KernelTable& k : AvailableKernelTables()) {
      std::vector<float> got = x;
      k.softmax(got.data(), n);
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(std::fabs(got[i] - want[i]), rel * want[i] + kSoftmaxAbsTolerance)
            << k.target_name << " n=" << n << " i=" << i << " got " << got[i] << " want "
            << want[i];
        sum += got[i];
      }
      if (n >= 3) {
        EXPECT_EQ(got[1], 0.0f);
        EXPECT_EQ(got[static_cast<size_t>(n) - 1], 0.0f);
      }
      EXPECT_NEAR(sum, 1.0, rel) << k.target_name;
    }
  }
}

TEST(SwiGluTest, EveryTargetWithinBudget) {
  std::mt19937 rng(3);
  const KernelTable& ref = ReferenceKernelTable();
  for (int64_t n : kSizes) {
    std::vector<float> gate = RandomFloats(rng, static_cast<size_t>(n), 4.0f);
    const std::vector<float> up = RandomFloats(rng, static_cast<size_t>(n));
    // Extreme gates where e^-g over- or underflows.
    const float extremes[] = {-100.0f, 100.0f, -88.5f, -87.0f, 88.5f, -20.0f};
    for (size_t i = 0; i < std::size(extremes) && i < gate.size(); i += 2) gate[i] = extremes[i];
    std::vector<float> want(static_cast<size_t>(n));
    ref.swiglu(gate.data(), up.data(), n, want.data());
    for (const KernelTable& k : AvailableKernelTables()) {
      std::vector<float> got(static_cast<size_t>(n));
      k.swiglu(gate.data(), up.data(), n, got.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(std::fabs(got[i] - want[i]),
                  kSwiGluRelTolerance * std::fabs(want[i]) + kSwiGluAbsTolerance)
            << k.target_name << " n=" << n << " gate " << gate[i] << " got " << got[i] << " want "
            << want[i];
      }
    }
  }
}

TEST(AddInPlaceTest, EveryTargetBitIdentical) {
  std::mt19937 rng(4);
  for (int64_t n : kSizes) {
    const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n));
    const std::vector<float> y0 = RandomFloats(rng, static_cast<size_t>(n));
    std::vector<float> want = y0;
    ReferenceKernelTable().add_in_place(want.data(), x.data(), n);
    for (const KernelTable& k : AvailableKernelTables()) {
      std::vector<float> got = y0;
      k.add_in_place(got.data(), x.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(got[i], want[i])) << k.target_name;
    }
  }
}

// The public functions run the forced target's kernels.
TEST(VectorOpsTest, PublicFunctionsUseTheForcedTarget) {
  std::mt19937 rng(8);
  const int64_t n = 77;
  const std::vector<float> x = RandomFloats(rng, n, 3.0f);
  const std::vector<float> w = RandomFloats(rng, n);
  for (const KernelTable& k : AvailableKernelTables()) {
    ScopedKernelTarget scoped(k.target_name);
    std::vector<float> want(n);
    std::vector<float> got(n);
    k.rms_norm(x.data(), w.data(), n, 1e-6f, want.data());
    RmsNorm(x.data(), w.data(), n, 1e-6f, got.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(got[i], want[i])) << k.target_name;
    want = x;
    got = x;
    k.softmax(want.data(), n);
    Softmax(got.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(got[i], want[i])) << k.target_name;
    k.swiglu(x.data(), w.data(), n, want.data());
    SwiGlu(x.data(), w.data(), n, got.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(SameFloat(got[i], want[i])) << k.target_name;
  }
}

}  // namespace
}  // namespace kvengine
