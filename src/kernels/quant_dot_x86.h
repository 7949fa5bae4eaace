// Internal: the x86 builds of the quantized dot products (quant_dot.h, quant_dot_x86.cc).
#pragma once

#include <cstdint>

#include "kernels/quant_dot.h"
#include "kernels/quant_tile.h"

namespace kvengine::kernels_internal {

// One x86 build's whole-row and column-range dot products (as kernels_ref::QuantDotTokens and
// QuantDotRange, bit for bit), and its token tiles (quant_tile.h).
struct X86QuantDots {
  QuantDotTokensFn tokens = nullptr;
  QuantDotRangeFn range = nullptr;
  QuantTileRowsFn tile = nullptr;
};

// The AVX-512 VNNI kernels when `allow_vnni` and the CPU has AVX-512 F/BW/VL/VNNI; else the AVX2
// kernels when the CPU has AVX2, FMA and F16C; else nullptrs (and always nullptrs off x86).
X86QuantDots X86QuantDot(bool allow_vnni);

}  // namespace kvengine::kernels_internal
