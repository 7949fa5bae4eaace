// SIMD vector kernels (RmsNorm, Softmax, SwiGlu, AddInPlace, Exp), compiled once per Highway
// target. Element-wise steps perform the reference's operations in the reference's order (so
// AddInPlace and the scaling steps are bit-identical to kernel_ref.h); they differ from it only in
// reductions (lane-parallel float sums instead of double) and in the exponential (exp_simd-inl.h).
// Tails shorter than a vector go through padded stack buffers: nothing is read or written past n.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vector_ops_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "hwy/highway.h"
#include "kernels/exp_simd-inl.h"
#include "kernels/kernel_registry.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// out[i] = f(a[i], b[i]) a vector at a time; out may be a or b. Tail lanes of a and b read as 0.
template <class F>
void Map2(const float* a, const float* b, size_t n, float* out, const F& f) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(f(hn::LoadU(df, a + i), hn::LoadU(df, b + i)), df, out + i);
  }
  if (i == n) return;
  HWY_ALIGN float pa[kMaxLanes] = {};
  HWY_ALIGN float pb[kMaxLanes] = {};
  HWY_ALIGN float po[kMaxLanes];
  std::memcpy(pa, a + i, (n - i) * sizeof(float));
  std::memcpy(pb, b + i, (n - i) * sizeof(float));
  hn::Store(f(hn::Load(df, pa), hn::Load(df, pb)), df, po);
  std::memcpy(out + i, po, (n - i) * sizeof(float));
}

// The vector at x + i when a whole one fits before n, else the rest padded with `pad`.
HWY_INLINE VF LoadOrPad(const float* x, size_t i, size_t n, float pad) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  if (i + lanes <= n) return hn::LoadU(df, x + i);
  HWY_ALIGN float buf[kMaxLanes];
  for (size_t j = 0; j < lanes; ++j) buf[j] = i + j < n ? x[i + j] : pad;
  return hn::Load(df, buf);
}

// Sum of f(x[i]) in float: two accumulators over pairs of vectors, the last (possibly padded)
// vector into the second. f(pad) must be 0.
template <class F>
float SumOf(const float* x, size_t n, float pad, const F& f) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF acc0 = hn::Zero(df);
  VF acc1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::Add(acc0, f(hn::LoadU(df, x + i)));
    acc1 = hn::Add(acc1, f(hn::LoadU(df, x + i + lanes)));
  }
  for (; i < n; i += lanes) acc1 = hn::Add(acc1, f(LoadOrPad(x, i, n, pad)));
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
}

void RmsNormT(const float* x, const float* w, int64_t n_signed, float eps, float* out) {
  const DF df;
  const size_t n = static_cast<size_t>(n_signed);
  const float sum = SumOf(x, n, 0.0f, [](VF v) { return hn::Mul(v, v); });
  const float mean = sum / static_cast<float>(n);
  const VF scale = hn::Set(df, 1.0f / std::sqrt(mean + eps));
  if (w == nullptr) {
    Map2(x, x, n, out, [&](VF v, VF) { return hn::Mul(v, scale); });
  } else {
    Map2(x, w, n, out, [&](VF v, VF g) { return hn::Mul(hn::Mul(v, scale), g); });
  }
}

void SoftmaxT(float* x, int64_t n_signed) {
  const DF df;
  const size_t n = static_cast<size_t>(n_signed);
  const size_t lanes = hn::Lanes(df);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  VF vmax = hn::Set(df, kNegInf);
  for (size_t i = 0; i < n; i += lanes) vmax = hn::Max(vmax, LoadOrPad(x, i, n, kNegInf));
  const VF m = hn::Set(df, hn::GetLane(hn::MaxOfLanes(df, vmax)));
  // x = e^(x - m) in place; padding lanes (-inf) give 0 and are not stored.
  Map2(x, x, n, x, [&](VF v, VF) { return Exp(df, hn::Sub(v, m)); });
  const float sum = SumOf(x, n, 0.0f, [](VF v) { return v; });
  const VF inv = hn::Set(df, 1.0f / sum);
  Map2(x, x, n, x, [&](VF v, VF) { return hn::Mul(v, inv); });
}

void SwiGluT(const float* gate, const float* up, int64_t n, float* out) {
  const DF df;
  const VF one = hn::Set(df, 1.0f);
  Map2(gate, up, static_cast<size_t>(n), out, [&](VF g, VF u) {
    const VF silu = hn::Div(g, hn::Add(one, Exp(df, hn::Neg(g))));
    return hn::Mul(silu, u);
  });
}

void AddInPlaceT(float* y, const float* x, int64_t n) {
  Map2(y, x, static_cast<size_t>(n), y, [](VF a, VF b) { return hn::Add(a, b); });
}

void ExpT(const float* x, int64_t n, float* out) {
  const DF df;
  Map2(x, x, static_cast<size_t>(n), out, [&](VF v, VF) { return Exp(df, v); });
}

void ExpNonPositiveT(const float* x, int64_t n, float* out) {
  const DF df;
  Map2(x, x, static_cast<size_t>(n), out, [&](VF v, VF) { return ExpNonPositive(df, v); });
}

}  // namespace

void FillVectorOps(KernelTable* table) {
  table->rms_norm = &RmsNormT;
  table->softmax = &SoftmaxT;
  table->swiglu = &SwiGluT;
  table->add_in_place = &AddInPlaceT;
  table->exp = &ExpT;
  table->exp_non_positive = &ExpNonPositiveT;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(FillVectorOps);

void kernels_internal::FillVectorOpsKernels(int64_t hwy_target, KernelTable* table) {
  const auto fill = HWY_DISPATCH_TABLE(FillVectorOps)[HwyExportIndex(hwy_target)];
  KV_CHECK(fill != nullptr) << "target " << hwy::TargetName(hwy_target) << " not compiled";
  fill(table);
}

}  // namespace kvengine
#endif  // HWY_ONCE
