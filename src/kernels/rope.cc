// RoPE angles (double precision), the public entry points, and the scalar reference rotation.
#include "kernels/rope.h"

#include <cmath>

#include "base/check.h"
#include "kernels/kernel_ref.h"
#include "kernels/kernel_target.h"

namespace kvengine {
namespace {

void CheckRope(int n_heads, int head_dim, const RopeParams& p) {
  KV_CHECK(n_heads >= 1) << n_heads;
  KV_CHECK(p.n_rot >= 2 && p.n_rot % 2 == 0 && p.n_rot <= head_dim && p.n_rot <= kMaxRopeDims)
      << "n_rot=" << p.n_rot << " head_dim=" << head_dim;
}

}  // namespace

void RopeCosSin(int64_t pos, const RopeParams& p, float* cos_sin) {
  KV_CHECK(p.n_rot >= 2 && p.n_rot % 2 == 0 && p.n_rot <= kMaxRopeDims) << "n_rot=" << p.n_rot;
  const int half = p.n_rot / 2;
  const double scaled_pos = static_cast<double>(pos) * static_cast<double>(p.freq_scale);
  for (int i = 0; i < half; ++i) {
    const double inv_freq =
        std::pow(static_cast<double>(p.theta), -2.0 * i / static_cast<double>(p.n_rot));
    const double angle = scaled_pos * inv_freq;
    cos_sin[i] = static_cast<float>(std::cos(angle));
    cos_sin[half + i] = static_cast<float>(std::sin(angle));
  }
}

void RopeApply(float* x, int n_heads, int head_dim, const float* cos_sin, const RopeParams& p) {
  CheckRope(n_heads, head_dim, p);
  ActiveKernelTable().rope_apply(x, n_heads, head_dim, p.n_rot, p.neox, cos_sin);
}

void Rope(float* x, int n_heads, int head_dim, int64_t pos, const RopeParams& p) {
  CheckRope(n_heads, head_dim, p);
  float cos_sin[kMaxRopeDims];  // [0, n_rot / 2): cos; [n_rot / 2, n_rot): sin.
  RopeCosSin(pos, p, cos_sin);
  ActiveKernelTable().rope_apply(x, n_heads, head_dim, p.n_rot, p.neox, cos_sin);
}

void kernels_ref::RopeApply(float* x, int n_heads, int head_dim, int n_rot, bool neox,
                            const float* cos_sin) {
  const int half = n_rot / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* head = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cos_sin[i];
      const float s = cos_sin[half + i];
      float* a = neox ? head + i : head + 2 * i;             // x0
      float* b = neox ? head + half + i : head + 2 * i + 1;  // x1
      const float x0 = *a;
      const float x1 = *b;
      *a = x0 * c - x1 * s;
      *b = x0 * s + x1 * c;
    }
  }
}

}  // namespace kvengine
