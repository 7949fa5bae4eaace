// The x86 quantized dot products (quant_dot.h): an AVX2 build and an AVX-512 VNNI build of
// quant_dot_x86-inl.h and of the token tiles (quant_tile.h, quant_tile_x86-inl.h), each in
// functions with a target attribute (Highway 1.0.3 does not build its AVX3_DL target
// here), chosen at run time by what the CPU reports. All compute the integer sums exactly and the
// float steps in the reference's order: their results equal kernels_ref::QuantDotTokens,
// QuantDotRange and QuantDot bit for bit.
#include "kernels/quant_dot_x86.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_tile.h"
#include "quant/weight_blocks.h"

namespace kvengine::kernels_internal {

#define KV_QD_NS quant_dot_avx2
#define KV_QD_TARGET "avx2,fma,f16c"
#define KV_QD_VNNI 0
#include "kernels/quant_dot_x86-inl.h"
#include "kernels/quant_tile_x86-inl.h"
#undef KV_QD_NS
#undef KV_QD_TARGET
#undef KV_QD_VNNI

#define KV_QD_NS quant_dot_vnni
#define KV_QD_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"
#define KV_QD_VNNI 1
#include "kernels/quant_dot_x86-inl.h"
#include "kernels/quant_tile_x86-inl.h"
#undef KV_QD_NS
#undef KV_QD_TARGET
#undef KV_QD_VNNI

X86QuantDots X86QuantDot(bool allow_vnni) {
  __builtin_cpu_init();
  // The VNNI build also uses AVX2/FMA/F16C instructions (KV_QD_TARGET above).
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CpuHasF16cBit();
  if (allow_vnni && avx2 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      CpuHasAvx512VnniBit()) {
    return {&quant_dot_vnni::QuantDotTokens, &quant_dot_vnni::QuantDotRange,
            &quant_dot_vnni::QuantTileRows};
  }
  if (avx2) {
    return {&quant_dot_avx2::QuantDotTokens, &quant_dot_avx2::QuantDotRange,
            &quant_dot_avx2::QuantTileRows};
  }
  return {};
}

}  // namespace kvengine::kernels_internal

#else  // Not x86.

namespace kvengine::kernels_internal {
X86QuantDots X86QuantDot(bool) { return {}; }
}  // namespace kvengine::kernels_internal

#endif
