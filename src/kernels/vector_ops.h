// Per-token vector kernels of the forward pass: RMSNorm, softmax, SwiGLU and the residual add.
// Each runs on the active kernel target (kernel_target.h); results are a function of the inputs
// alone (no dependence on batch or threads). Pointers need no alignment. Error budgets of the SIMD
// versions against the scalar reference are in kernel_tolerance.h.
#pragma once

#include <cstdint>

namespace kvengine {

// out[i] = x[i] * (1 / sqrt(mean_j(x[j]^2) + eps)) * w[i]; w == nullptr means all ones.
// x, w, out: n floats (n >= 1); out may be x.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);

// x[i] = e^(x[i] - max) / sum_j e^(x[j] - max), in place (n >= 1). Entries may be -inf (masked;
// they become 0) but at least one must be finite, and none +inf or NaN.
void Softmax(float* x, int64_t n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g). n floats each; out may be gate or up.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

// y[i] += x[i] for i < n (bit-identical on every target).
void AddInPlace(float* y, const float* x, int64_t n);

}  // namespace kvengine
