// Vector e^x for the SIMD kernels (softmax, SiLU; ExpNonPositive below for the attention softmax),
// included once per Highway target by the files that use it (not a public header). Its error budget
// vs the exact e^x is kExpMaxRelError (kernel_tolerance.h), checked on every target by
// vector_ops_test.cc.
//
// Method: x = n * ln2 + r with n = round(x / ln2), |r| <= ln2 / 2 (+ rounding), reduced in two
// steps (Cody-Waite: ln2_hi has 9 significant bits, so n * ln2_hi is exact for |n| <= 2^15);
// e^r by its degree-7 Taylor polynomial (truncation below 2^-27 relative on that interval) in
// Horner form; then times 2^n as two powers of two 2^(n/2) * 2^(n - n/2), each a normal float
// for every n in [-150, 128], so results that overflow become inf and results below 2^-126 are
// rounded once into the subnormals, as std::exp does (AVX-512: one vscalefps, the same bits).
// Special inputs: x >= 89 gives +inf (and so does +inf), x <= -104 gives +0 (and -inf does),
// NaN gives NaN.

#if defined(KVENGINE_KERNELS_EXP_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_KERNELS_EXP_SIMD_INL_H_
#undef KVENGINE_KERNELS_EXP_SIMD_INL_H_
#else
#define KVENGINE_KERNELS_EXP_SIMD_INL_H_
#endif

#include <type_traits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The range reduction of both exponentials below: x = n * ln2 + r for |x * log2(e)| far below
// 2^22. Returns r; *n = round(x * log2(e)) as a float, by the 1.5 * 2^23 magic add, and *t = that
// sum, 1.5 * 2^23 + n exactly (one binade, ulp 1), so t's bits are the magic's plus n.
template <class D>
HWY_INLINE hn::Vec<D> ReduceByLn2(D d, hn::Vec<D> x, hn::Vec<D>* n, hn::Vec<D>* t) {
  const hn::Vec<D> magic = hn::Set(d, 0x1.8p23f);
  *t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), magic);
  *n = hn::Sub(*t, magic);
  const hn::Vec<D> r = hn::NegMulAdd(*n, hn::Set(d, 0.693359375f), x);  // ln2_hi = 355 / 512.
  return hn::NegMulAdd(*n, hn::Set(d, -2.12194440e-4f), r);             // ln2_lo = ln2 - ln2_hi.
}

template <class D>
HWY_INLINE hn::Vec<D> Exp(D d, hn::Vec<D> x) {
  using V = hn::Vec<D>;
  const hn::RebindToSigned<D> di;
  // Beyond these bounds the result is inf / 0 anyway; clamping keeps n within [-150, 128].
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -104.0f)), hn::Set(d, 89.0f));
  V n, t;
  const V r = ReduceByLn2(d, xc, &n, &t);
  // e^r = sum_k r^k / k!, k <= 7.
  V p = hn::Set(d, 1.0f / 5040.0f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 720.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 120.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 24.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 6.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.5f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f));
#if HWY_TARGET == HWY_AVX3
  // p * 2^n in one instruction, rounded once: the same bits as the two steps below (there p *
  // 2^n1 is exact, so only the second multiply rounds), overflow and subnormals included.
  if constexpr (std::is_same_v<V, hn::Vec<hn::ScalableTag<float>>>) {
    return hn::IfThenElse(hn::IsNaN(x), x, V{_mm512_scalef_ps(p.raw, n.raw)});
  }
#endif
  // 2^n = 2^n1 * 2^n2 with n1 = floor(n / 2): both exponents within [-75, 64].
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni);
  const auto n2 = hn::Sub(ni, n1);
  const auto bias = hn::Set(di, 127);
  const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n2, bias)));
  const V result = hn::Mul(hn::Mul(p, s1), s2);
  return hn::IfThenElse(hn::IsNaN(x), x, result);
}

// e^x for x <= 0 (and NaN), the attention softmax's exponential (its arguments are s - max s):
// Exp's range reduction and polynomial without what only other inputs need. x is clamped below
// at -88 (not above), so n lies in [-127, 0] and 2^n is one power of two built in the exponent
// field (n = -127 gives +0): one multiply instead of Exp's two-step scaling, and no upper clamp.
// Results within Exp's budget (kExpMaxRelError; measured 1.7 u on AVX2 and SSE4), +0 at x <= -88
// and where Exp's result would be below about 2^-126 (softmax weights that small are nothing
// next to the maximum's 1), -inf gives +0, NaN stays NaN, e^0 = 1. Positive x gives wrong results
// (n is not clamped above): callers pass x <= 0 only.
template <class D>
HWY_INLINE hn::Vec<D> ExpNonPositive(D d, hn::Vec<D> x) {
  using V = hn::Vec<D>;
  const hn::RebindToSigned<D> di;
  V n, t;
  const V r = ReduceByLn2(d, hn::Max(x, hn::Set(d, -88.0f)), &n, &t);
  // The same degree-7 Taylor polynomial as Exp's, evaluated by Estrin's scheme: 1 + (r + r^2
  // (1/2 + r/6) + r^4 ((1/24 + r/120) + r^2 (1/720 + r/5040))), the 1 added last so the small
  // part's roundings count at its own scale. Its dependency chain is 4 operations deep where
  // Horner's is 7 FMAs: the softmax step is bound by that latency, not by its operation count
  // (Zen 3, attention at d = 64 in L3: Horner with one scaling 2% faster than Exp, this 3%, and
  // with 2^n's bit trick below 5%).
  const V r2 = hn::Mul(r, r), r4 = hn::Mul(r2, r2);
  const V a23 = hn::MulAdd(r, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f));
  const V a45 = hn::MulAdd(r, hn::Set(d, 1.0f / 120.0f), hn::Set(d, 1.0f / 24.0f));
  const V a67 = hn::MulAdd(r, hn::Set(d, 1.0f / 5040.0f), hn::Set(d, 1.0f / 720.0f));
  const V small = hn::MulAdd(hn::MulAdd(a67, r2, a45), r4, hn::MulAdd(a23, r2, r));
  const V p = hn::Add(small, hn::Set(d, 1.0f));
  // 2^n: the biased exponent n + 127 in [0, 127] (0 is the float +0), from t's low bits without
  // a float-to-int conversion (Highway's saturating one is 4 instructions on AVX2): the shift
  // drops magic's bits, which all lie at or above bit 22 (0x4B400000).
  const V scale = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, t), hn::Set(di, 127))));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Mul(p, scale));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
