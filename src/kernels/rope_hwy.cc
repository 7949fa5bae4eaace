// SIMD RoPE rotation, compiled once per Highway target. It performs exactly the reference's
// operations (kernel_ref.h: two products and one add / subtract per output, no fused multiply-add)
// so its results are bit-identical to it on every target:
//   NeoX: vectors of x0 = head[i ..] and x1 = head[half + i ..] against cos[i ..] / sin[i ..].
//   normal: pairs are adjacent, so with cos and sin expanded per element (ce[2i] = ce[2i+1] = c_i;
//     se[2i] = -s_i, se[2i+1] = s_i) and x with its pairs swapped (xs[2i] = x1, xs[2i+1] = x0):
//     out = x * ce + xs * se, i.e. x0 * c + x1 * (-s) == x0 * c - x1 * s and x1 * c + x0 * s
//     == x0 * s + x1 * c exactly (IEEE negation and commutative addition are exact).
// Tails, and the one-lane SCALAR target, finish with the scalar reference loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/rope_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "base/check.h"
#include "hwy/highway.h"
#include "kernels/kernel_registry.h"
#include "kernels/rope.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Rotates pairs (i, i + half) for i in [i0, half) of one head: the scalar tail.
void NeoxTail(float* head, int half, int i0, const float* cos_sin) {
  for (int i = i0; i < half; ++i) {
    const float c = cos_sin[i];
    const float s = cos_sin[half + i];
    const float x0 = head[i];
    const float x1 = head[half + i];
    head[i] = x0 * c - x1 * s;
    head[half + i] = x0 * s + x1 * c;
  }
}

// Rotates pairs (2i, 2i + 1) for 2i in [j0, n_rot) of one head: the scalar tail.
void NormalTail(float* head, int n_rot, int j0, const float* cos_sin) {
  const int half = n_rot / 2;
  for (int i = j0 / 2; i < half; ++i) {
    const float c = cos_sin[i];
    const float s = cos_sin[half + i];
    const float x0 = head[2 * i];
    const float x1 = head[2 * i + 1];
    head[2 * i] = x0 * c - x1 * s;
    head[2 * i + 1] = x0 * s + x1 * c;
  }
}

void RopeApplyT(float* x, int n_heads, int head_dim, int n_rot, bool neox, const float* cos_sin) {
  const DF df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const int half = n_rot / 2;
  if (neox) {
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + static_cast<int64_t>(h) * head_dim;
      int i = 0;
      for (; i + lanes <= half; i += lanes) {
        const VF x0 = hn::LoadU(df, head + i);
        const VF x1 = hn::LoadU(df, head + half + i);
        const VF c = hn::LoadU(df, cos_sin + i);
        const VF s = hn::LoadU(df, cos_sin + half + i);
        hn::StoreU(hn::Sub(hn::Mul(x0, c), hn::Mul(x1, s)), df, head + i);
        hn::StoreU(hn::Add(hn::Mul(x0, s), hn::Mul(x1, c)), df, head + half + i);
      }
      NeoxTail(head, half, i, cos_sin);
    }
    return;
  }
#if HWY_TARGET == HWY_SCALAR  // One lane: no pair fits in a vector.
  for (int h = 0; h < n_heads; ++h) {
    NormalTail(x + static_cast<int64_t>(h) * head_dim, n_rot, 0, cos_sin);
  }
#else
  // Expanded cos / signed sin per rotated element (only the whole vectors are used).
  HWY_ALIGN float ce[kMaxRopeDims];
  HWY_ALIGN float se[kMaxRopeDims];
  const int vec_end = n_rot - n_rot % lanes;  // Even, as lanes is.
  for (int i = 0; 2 * i < vec_end; ++i) {
    ce[2 * i] = ce[2 * i + 1] = cos_sin[i];
    se[2 * i] = -cos_sin[half + i];
    se[2 * i + 1] = cos_sin[half + i];
  }
  for (int h = 0; h < n_heads; ++h) {
    float* head = x + static_cast<int64_t>(h) * head_dim;
    for (int j = 0; j < vec_end; j += lanes) {
      const VF v = hn::LoadU(df, head + j);
      const VF swapped = hn::Shuffle2301(v);
      hn::StoreU(hn::Add(hn::Mul(v, hn::Load(df, ce + j)), hn::Mul(swapped, hn::Load(df, se + j))),
                 df, head + j);
    }
    NormalTail(head, n_rot, vec_end, cos_sin);
  }
#endif
}

}  // namespace

void FillRope(KernelTable* table) { table->rope_apply = &RopeApplyT; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(FillRope);

void kernels_internal::FillRopeKernels(int64_t hwy_target, KernelTable* table) {
  const auto fill = HWY_DISPATCH_TABLE(FillRope)[HwyExportIndex(hwy_target)];
  KV_CHECK(fill != nullptr) << "target " << hwy::TargetName(hwy_target) << " not compiled";
  fill(table);
}

}  // namespace kvengine
#endif  // HWY_ONCE
