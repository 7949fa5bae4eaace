// Internal: the x86 builds of the quantized dot products (quant_dot.h, quant_dot_x86.cc).
#pragma once

#include <cstdint>

#include "kernels/quant_dot.h"

namespace kvengine::kernels_internal {

// The AVX-512 VNNI kernel (as kernels_ref::QuantDotTokens, bit for bit) when `allow_vnni` and
// the CPU has AVX-512 F/BW/VL/VNNI; else the AVX2
// kernel when the CPU has AVX2, FMA and F16C; else nullptr (and always nullptr off x86).
QuantDotTokensFn X86QuantDot(bool allow_vnni);

}  // namespace kvengine::kernels_internal
