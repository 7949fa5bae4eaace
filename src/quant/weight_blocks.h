// Block layouts of the quantized weight formats (ggml-common.h's block_q4_0 ... block_q6_K), as
// byte offsets within one block. Multi-byte fields are little-endian; f16 is IEEE binary16.
// Elements are numbered 0 .. n-1 within the block; "q" is an unsigned code unless stated.
//
// 32-element blocks:
//   Q4_0 (18 B): f16 d @0, qs[16] @2.        q(j) = qs[j] & 15, q(j + 16) = qs[j] >> 4 (j < 16)
//                                             element = (q - 8) * d
//   Q4_1 (20 B): f16 d @0, f16 m @2, qs[16] @4.   element = q * d + m
//   Q5_0 (22 B): f16 d @0, u32 qh @2, qs[16] @6.  q as Q4_0, plus bit j of qh as bit 4 of q(j)
//                                             (j < 32); element = (q - 16) * d
//   Q5_1 (24 B): f16 d @0, f16 m @2, u32 qh @4, qs[16] @8.  element = q * d + m
// 256-element super-blocks, in 8 sub-blocks of 32 (Q4_K, Q5_K) or 16 of 16 (Q6_K):
//   Q4_K (144 B): f16 d @0, f16 dmin @2, scales[12] @4, qs[128] @16.
//     Sub-block s has a 6-bit scale sc(s) and 6-bit min mn(s) packed in `scales` (ggml's
//     get_scale_min_k4): s < 4: sc = b[s] & 63, mn = b[s + 4] & 63; s >= 4:
//     sc = (b[s + 4] & 15) | (b[s - 4] >> 6) << 4, mn = (b[s + 4] >> 4) | (b[s] >> 6) << 4.
//     Elements 64 i + l (l < 32) are qs[32 i + l] & 15 in sub-block 2 i; elements 64 i + 32 + l
//     are qs[32 i + l] >> 4 in sub-block 2 i + 1 (i < 4).
//     element = (d * sc) * q - (dmin * mn)
//   Q5_K (176 B): f16 d @0, f16 dmin @2, scales[12] @4, qh[32] @16, qs[128] @48.
//     As Q4_K, plus bit 4 of q from qh[l]: bit 2 i for element 64 i + l, bit 2 i + 1 for
//     element 64 i + 32 + l.
//   Q6_K (210 B): ql[128] @0, qh[64] @128, int8 scales[16] @192, f16 d @208.
//     Per half h < 2 (elements 128 h ..), with L = ql + 64 h, H = qh + 32 h and l < 32:
//       element 128 h + l      = L[l] & 15      | (H[l] >> 0 & 3) << 4
//       element 128 h + 32 + l = L[32 + l] & 15 | (H[l] >> 2 & 3) << 4
//       element 128 h + 64 + l = L[l] >> 4      | (H[l] >> 4 & 3) << 4
//       element 128 h + 96 + l = L[32 + l] >> 4 | (H[l] >> 6 & 3) << 4
//     element e = (d * scales[e / 16]) * (q - 32)
//
// Exactness: every product above is exact in binary32 (an f16 has 11 significant bits, a 6- or
// 8-bit scale at most 8, a code at most 6, total <= 24), so `(d * sc) * q` equals the real
// product and the only rounding is the final + m / - dmin * mn. Any implementation that performs
// these operations (multiply, then add or subtract) therefore gets the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/gguf_layout.h"

#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine {

// The f16 field (d, m, dmin) at p, as float.
inline float LoadBlockF16(const uint8_t* p) { return F16ToF32(quant_internal::LoadU16(p)); }

inline constexpr size_t kQBlockElements = 32;     // QK4_0 = QK4_1 = QK5_0 = QK5_1.
inline constexpr size_t kQKBlockElements = 256;   // QK_K.
inline constexpr size_t kQ4_0BlockBytes = 18;
inline constexpr size_t kQ4_1BlockBytes = 20;
inline constexpr size_t kQ5_0BlockBytes = 22;
inline constexpr size_t kQ5_1BlockBytes = 24;
inline constexpr size_t kQ4_KBlockBytes = 144;
inline constexpr size_t kQ5_KBlockBytes = 176;
inline constexpr size_t kQ6_KBlockBytes = 210;

// Sub-block s's (scale, min) of a Q4_K / Q5_K super-block from its 12 packed bytes.
inline void KQuantScaleMin(const uint8_t* b, int s, uint8_t* sc, uint8_t* mn) {
  if (s < 4) {
    *sc = b[s] & 63;
    *mn = b[s + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((b[s + 4] & 15) | ((b[s - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((b[s + 4] >> 4) | ((b[s] >> 6) << 4));
  }
}

// Byte offsets of the f16 fields (scales, mins) within one block of a block-quantized type, as
// laid out above; empty for the float types.
inline std::vector<size_t> BlockHalfFieldOffsets(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
      return {0};
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      return {0, 2};
    case GgmlType::kQ6_K:
      return {208};
    default:
      return {};
  }
}

}  // namespace kvengine
