// RoPE: every target bit-identical to the scalar reference, the reference within
// kRopeRelTolerance of a double-precision rotation, both orderings, partial rotation.
#include "kernels/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernel_target.h"
#include "kernels/kernel_tolerance.h"
#include "kernels/kernels_test_util.h"

namespace kvengine {
namespace {

using kernels_test::RandomFloats;
using kernels_test::SameFloat;
using kernels_test::ScopedKernelTarget;

struct RopeShape {
  int n_heads;
  int head_dim;
  int n_rot;
};
constexpr RopeShape kShapes[] = {{1, 8, 8},   {3, 64, 64}, {2, 128, 128}, {4, 80, 80},
                                 {2, 64, 32}, {3, 96, 6},  {1, 34, 34},   {2, 128, 2}};

// The rotation computed entirely in double (angles as RopeCosSin defines them).
std::vector<double> RopeInDouble(const std::vector<float>& x, const RopeShape& s, int64_t pos,
                                 const RopeParams& p) {
  std::vector<double> out(x.begin(), x.end());
  const int half = s.n_rot / 2;
  for (int h = 0; h < s.n_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos) * p.freq_scale *
                           std::pow(static_cast<double>(p.theta), -2.0 * i / s.n_rot);
      const size_t a = static_cast<size_t>(h * s.head_dim + (p.neox ? i : 2 * i));
      const size_t b = static_cast<size_t>(h * s.head_dim + (p.neox ? i + half : 2 * i + 1));
      out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
      out[b] = x[a] * std::sin(angle) + x[b] * std::cos(angle);
    }
  }
  return out;
}

TEST(RopeTest, EveryTargetBitIdenticalToReference) {
  std::mt19937 rng(5);
  for (const RopeShape& s : kShapes) {
    for (bool neox : {false, true}) {
      RopeParams p;
      p.n_rot = s.n_rot;
      p.neox = neox;
      std::vector<float> cos_sin(static_cast<size_t>(s.n_rot));
      RopeCosSin(1234, p, cos_sin.data());
      const std::vector<float> x =
          RandomFloats(rng, static_cast<size_t>(s.n_heads * s.head_dim), 2.0f);
      std::vector<float> want = x;
      ReferenceKernelTable().rope_apply(want.data(), s.n_heads, s.head_dim, s.n_rot, neox,
                                        cos_sin.data());
      for (const std::string& target : AvailableKernelTargets()) {
        ScopedKernelTarget scoped(target);
        std::vector<float> got = x;
        RopeApply(got.data(), s.n_heads, s.head_dim, cos_sin.data(), p);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(SameFloat(got[i], want[i]))
              << target << " neox=" << neox << " head_dim=" << s.head_dim << " n_rot=" << s.n_rot
              << " i=" << i << ": " << got[i] << " vs " << want[i];
        }
      }
    }
  }
}

TEST(RopeTest, CloseToDoublePrecisionRotation) {
  std::mt19937 rng(6);
  for (const RopeShape& s : kShapes) {
    for (bool neox : {false, true}) {
      for (int64_t pos :
           {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{4095}, int64_t{32767}, int64_t{1000000}}) {
        for (const auto& [theta, freq_scale] :
             {std::pair{10000.0f, 1.0f}, std::pair{500000.0f, 1.0f}, std::pair{10000.0f, 0.25f}}) {
          RopeParams p;
          p.n_rot = s.n_rot;
          p.theta = theta;
          p.freq_scale = freq_scale;
          p.neox = neox;
          const std::vector<float> x =
              RandomFloats(rng, static_cast<size_t>(s.n_heads * s.head_dim), 2.0f);
          std::vector<float> got = x;
          Rope(got.data(), s.n_heads, s.head_dim, pos, p);
          const std::vector<double> want = RopeInDouble(x, s, pos, p);
          const int half = s.n_rot / 2;
          for (int h = 0; h < s.n_heads; ++h) {
            for (int d = 0; d < s.head_dim; ++d) {
              const size_t idx = static_cast<size_t>(h * s.head_dim + d);
              if (d >= s.n_rot) {  // Not rotated: untouched.
                ASSERT_TRUE(SameFloat(got[idx], x[idx]));
                continue;
              }
              // The pair partner of d.
              const int partner = neox ? (d < half ? d + half : d - half) : (d ^ 1);
              const double scale =
                  std::fabs(x[idx]) + std::fabs(x[static_cast<size_t>(h * s.head_dim + partner)]);
              ASSERT_LE(std::fabs(got[idx] - want[idx]), kRopeRelTolerance * scale)
                  << "pos=" << pos << " theta=" << theta << " neox=" << neox << " d=" << d;
            }
          }
        }
      }
    }
  }
}

TEST(RopeTest, PositionZeroIsIdentityAndKnownAngle) {
  RopeParams p;
  p.n_rot = 4;
  std::vector<float> x = {1.5f, -2.0f, 0.25f, 3.0f, 7.0f};
  const std::vector<float> x0 = x;
  Rope(x.data(), 1, 5, 0, p);
  EXPECT_EQ(x, x0);
  // pos 1, pair 0 (dims 0, 1) rotates by exactly 1 radian; pair 1 by 10000^(-1/2) = 0.01.
  x = {1.0f, 0.0f, 1.0f, 0.0f, 7.0f};
  Rope(x.data(), 1, 5, 1, p);
  EXPECT_FLOAT_EQ(x[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(x[1], std::sin(1.0f));
  EXPECT_FLOAT_EQ(x[2], std::cos(0.01f));
  EXPECT_FLOAT_EQ(x[3], std::sin(0.01f));
  EXPECT_EQ(x[4], 7.0f);
  // NeoX pairs (0, 2) and (1, 3).
  p.neox = true;
  x = {1.0f, 1.0f, 0.0f, 0.0f, 7.0f};
  Rope(x.data(), 1, 5, 1, p);
  EXPECT_FLOAT_EQ(x[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(x[2], std::sin(1.0f));
  EXPECT_FLOAT_EQ(x[1], std::cos(0.01f));
  EXPECT_FLOAT_EQ(x[3], std::sin(0.01f));
}

TEST(RopeTest, CosSinSharedByHeadsEqualsRope) {
  std::mt19937 rng(9);
  RopeParams p;
  p.n_rot = 64;
  p.theta = 1e6f;
  const std::vector<float> x = RandomFloats(rng, 8 * 64);
  std::vector<float> a = x;
  std::vector<float> b = x;
  Rope(a.data(), 8, 64, 321, p);
  std::vector<float> cos_sin(64);
  RopeCosSin(321, p, cos_sin.data());
  RopeApply(b.data(), 8, 64, cos_sin.data(), p);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace kvengine
