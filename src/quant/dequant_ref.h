// Scalar reference decoders of the block-quantized weight formats (layouts in weight_blocks.h):
// plain loops in ggml's order of operations. DequantizeRow (kernel_ref.h) uses them for the
// formats below; the SIMD decoders (dequant_simd-inl.h) must equal them bit for bit.
#pragma once

#include <cstdint>

#include "quant/weight_view.h"

namespace kvengine::kernels_ref {

// dst[0, n_blocks * block elements) = the n_blocks blocks of `format` at src, decoded.
// `format` is one of kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K (KV_CHECKed).
void DequantizeBlocks(WeightFormat format, const uint8_t* src, int64_t n_blocks, float* dst);

}  // namespace kvengine::kernels_ref
