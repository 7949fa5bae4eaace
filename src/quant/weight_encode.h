// Encoding float weights into the GGUF tensor types a synthetic model is written in (F32, F16,
// BF16, Q8_0 here; Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K through weight_quantize.h), and
// decoding the first four back (for tests and for checking a written file; the other block
// formats decode with the kernels' reference, kernels_ref::DequantizeBlocks).
//
// Byte layouts (little-endian), n elements of one row or of consecutive rows:
//   F32   n x binary32
//   F16   n x binary16, round to nearest even (quant/half.h)
//   BF16  n x bfloat16, round to nearest even
//   Q8_0  n / 32 blocks of 34 bytes: { f16 d; int8 q[32]; }, element j of a block = d * q[j].
//         As ggml's quantize_row_q8_0_ref: d = max|x| / 127 (computed in f32), q = round(x / d)
//         half away from zero, so |q| <= 127; d is then stored as f16. A block of zeros has d = 0.
//   Q4_0 .. Q6_K  weight_quantize.h (layouts: src/quant/weight_blocks.h).
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>

#include "gguf/gguf_types.h"

namespace kvengine {

// Q8_0 of x.size() elements (a multiple of 32) into out (x.size() / 32 * 34 bytes).
void QuantizeQ8_0(std::span<const float> x, std::span<uint8_t> out);
// The inverse: out.size() (a multiple of 32) elements from in (out.size() / 32 * 34 bytes).
void DequantizeQ8_0(std::span<const uint8_t> in, std::span<float> out);

// True for the types EncodeWeights writes: F32, F16, BF16, Q8_0 and the seven of
// weight_quantize.h.
bool IsEncodableWeightType(GgmlType type);
// Bytes that n elements of `type` take (GgmlRowBytes: n * 4, n * 2, n * 2, n / 32 * 34, ...).
// `type` must be encodable and n a multiple of its block size (checked).
uint64_t EncodedWeightBytes(GgmlType type, uint64_t n);
// Encodes x as `type` into out, which holds exactly EncodedWeightBytes(type, x.size()) bytes.
void EncodeWeights(GgmlType type, std::span<const float> x, std::span<uint8_t> out);
// Decodes EncodedWeightBytes(type, out.size()) bytes of `type` into out; `type` is F32, F16,
// BF16 or Q8_0 (checked).
void DecodeWeights(GgmlType type, std::span<const uint8_t> in, std::span<float> out);

}  // namespace kvengine
