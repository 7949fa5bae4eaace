// The vector kernels' public entry points: argument checks, then the active kernel table.
#include "kernels/vector_ops.h"

#include "base/check.h"
#include "kernels/kernel_target.h"

namespace kvengine {

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  KV_CHECK(n >= 1) << n;
  ActiveKernelTable().rms_norm(x, w, n, eps, out);
}

void Softmax(float* x, int64_t n) {
  KV_CHECK(n >= 1) << n;
  ActiveKernelTable().softmax(x, n);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  KV_CHECK(n >= 0) << n;
  if (n > 0) ActiveKernelTable().swiglu(gate, up, n, out);
}

void AddInPlace(float* y, const float* x, int64_t n) {
  KV_CHECK(n >= 0) << n;
  if (n > 0) ActiveKernelTable().add_in_place(y, x, n);
}

}  // namespace kvengine
