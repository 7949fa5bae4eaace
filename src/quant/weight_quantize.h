// Quantizers (float -> blocks) for the block formats the runtime reads besides Q8_0: Q4_0, Q4_1,
// Q5_0, Q5_1 (blocks of 32 elements) and Q4_K, Q5_K, Q6_K (super-blocks of 256), so synthetic
// models can be written in every weight type the kernels run.
//
// Byte layouts and decoding rules: src/quant/weight_blocks.h (ggml's block_q4_0 ... block_q6_K).
// synth/ does not link kernels/; the tests decode with its scalar reference
// (kernels_ref::DequantizeBlocks) and compare.
//
// The choices, per format. f16 scales are rounded away from zero (Q4_1 / Q5_1's min down), so a
// stored scale is never smaller than the one computed and the codes never need more range:
//   Q4_0, Q5_0   d = m / -8 (/ -16), m the block's element of largest magnitude: m maps to code 0
//                exactly and the other side reaches +7 d (+15 d), so an element within half a
//                step of -m clips to the top code. Error <= |d| / 2, or <= |d| at the clip.
//   Q4_1, Q5_1   m = min rounded down to f16, d = (max - m) / 15 (/ 31). Error <= d / 2.
//   Q4_K, Q5_K   per sub-block of 32: lo = min(0, min x) (the format subtracts dmin * mn >= 0,
//                so an offset can only lower a sub-block), range = max x - lo;
//                dmin = max(-lo) / 63, d = max(range) / (L 63) (L = 15 / 31); each 6-bit min and
//                scale is the smallest that covers its sub-block (rounded up, not to nearest), so
//                no element clips. Error <= half the sub-block's stored step, which is at most
//                (range + dmin) / L + d.
//   Q6_K         per sub-block of 16: step = m / -32 as Q4_0; d = max |step| / 127, the int8
//                scale rounded away from zero. Error <= half the stored step, or one at the clip.
// llama.cpp's reference quantizers for Q4_0 ... Q5_1 are the same direct formulas (they round
// with the f32 scale, we with the stored f16 one). For Q4_K, Q5_K and Q6_K they search instead,
// per sub-block, over candidate scales (and mins) for the least weighted squared error, then round
// the 6- or 8-bit scales to nearest. Their errors are a little smaller on average; ours have the
// simple bounds above and the same format, which is all a synthetic model needs (its weights are
// random anyway).
//
// Pure functions; any thread. Deterministic: the library compiles with -ffp-contract=off.
#pragma once

#include <cstdint>
#include <span>

#include "gguf/gguf_types.h"

namespace kvengine {

// True for kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K and kQ6_K.
bool IsQuantizedBlockType(GgmlType type);

// Quantizes x (a whole number of the type's blocks: 32 or 256 elements) into out, which holds
// exactly GgmlRowBytes(type, x.size()) bytes. `type` must be one of the seven above (checked).
// Elements must be finite.
void QuantizeBlocks(GgmlType type, std::span<const float> x, std::span<uint8_t> out);

}  // namespace kvengine
