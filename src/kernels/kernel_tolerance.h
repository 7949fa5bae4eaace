// Error budgets of the SIMD kernels against the scalar reference (kernel_ref.h), as named
// constants. Tests hold every compiled target to them; higher layers can use them to set their own
// tolerances. u = 2^-24 is the unit roundoff of binary32.
//
// Where the SIMD code performs the reference's operations in the reference's order the budget is
// zero (bit-identical): DequantizeRow, AddInPlace, the RoPE rotation. Elsewhere the differences
// come from summation order, double vs float sums, and the vector exponential:
//   * a float sum of n products errs by at most about n u times the sum of their magnitudes
//     (both the reference and the SIMD sum, hence 2 n u between them);
//   * a float sum of n positive terms errs by at most n u of the sum itself;
//   * each further rounding (sqrt, division, product) adds u of the result.
#pragma once

#include <cstdint>

namespace kvengine {

inline constexpr double kUnitRoundoff = 0x1p-24;

// MatMul: |simd - ref| <= kMatMulRelTolerance * (cols + 2) * sum_c |w[r][c] * x[t][c]|.
inline constexpr double kMatMulRelTolerance = 2 * kUnitRoundoff;

// The vector exponential (exp_simd-inl.h) vs the exact e^x, for results in the normal range:
// |Exp(x) - e^x| <= kExpMaxRelError * e^x. Results below 2^-126 (x < -87.3) are within
// kExpMaxAbsError. Measured maximum over a dense sweep (vector_ops_test.cc prints it): 1.2 u on
// targets with FMA, 1.6 u without.
inline constexpr double kExpMaxRelError = 4 * kUnitRoundoff;
inline constexpr double kExpMaxAbsError = 0x1p-149;

// RmsNorm: |simd - ref| <= (kRmsNormRelTolerancePerElement * n + kRmsNormRelToleranceBase) * |ref|
// (float sum of n squares: n u; halved by the square root; plus the scalar steps on both sides).
inline constexpr double kRmsNormRelTolerancePerElement = kUnitRoundoff / 2;
inline constexpr double kRmsNormRelToleranceBase = 10 * kUnitRoundoff;

// Softmax: |simd - ref| <= (2 kExpMaxRelError + (n + 4) u) * ref + kSoftmaxAbsTolerance
// (each term's exponential, the float sum of n positive terms, the reciprocal and the product;
// the absolute term covers results that underflow into the subnormals).
inline constexpr double kSoftmaxRelTolerancePerElement = kUnitRoundoff;
inline constexpr double kSoftmaxRelToleranceBase = 2 * kExpMaxRelError + 4 * kUnitRoundoff;
inline constexpr double kSoftmaxAbsTolerance = 0x1p-126;

// SwiGlu: |simd - ref| <= kSwiGluRelTolerance * |ref| + kSwiGluAbsTolerance (the exponential's
// error, at most its own relative error in 1 + e^-g, then the division and the product; the
// absolute term covers gates near -88 where e^-g overflows on one side only).
inline constexpr double kSwiGluRelTolerance = 2 * kExpMaxRelError + 4 * kUnitRoundoff;
inline constexpr double kSwiGluAbsTolerance = 0x1p-120;

// RoPE: the rotation is bit-identical across targets. Against the exact rotation (double angles,
// double arithmetic), each output errs by at most kRopeRelTolerance * (|x0| + |x1|): cos and sin
// rounded to float (u/2 each), two products and one sum (u each).
inline constexpr double kRopeRelTolerance = 4 * kUnitRoundoff;

}  // namespace kvengine
