// Scalar reference decoders (dequant_ref.h). The library compiles with -ffp-contract=off, so each
// `a * b + c` below is a multiply then an add, as written.
#include "quant/dequant_ref.h"

#include <cstring>

#include "base/check.h"
#include "quant/weight_blocks.h"
#include "quant/half.h"

namespace kvengine::kernels_ref {
namespace {

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Q4_0 / Q4_1 / Q5_0 / Q5_1: y[32]. `qh` is the Q5 fifth-bit word (0 for Q4); `offset` the code
// subtracted before scaling (8 / 16 for the symmetric formats, 0 with a min).
void DecodeQ32(const uint8_t* qs, uint32_t qh, float d, int offset, bool has_min, float m,
               float* y) {
  for (int j = 0; j < 16; ++j) {
    const int q0 = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int q1 = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    if (has_min) {
      y[j] = static_cast<float>(q0) * d + m;
      y[j + 16] = static_cast<float>(q1) * d + m;
    } else {
      y[j] = static_cast<float>(q0 - offset) * d;
      y[j + 16] = static_cast<float>(q1 - offset) * d;
    }
  }
}

// Q4_K (qh == nullptr) and Q5_K: y[256].
void DecodeQ45K(const uint8_t* block, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = LoadBlockF16(block);
  const float dmin = LoadBlockF16(block + 2);
  const uint8_t* scales = block + 4;
  for (int i = 0; i < 4; ++i) {  // 64 elements: sub-blocks 2i (low nibbles), 2i+1 (high).
    for (int half = 0; half < 2; ++half) {
      uint8_t sc, mn;
      KQuantScaleMin(scales, 2 * i + half, &sc, &mn);
      const float ds = d * static_cast<float>(sc);
      const float ms = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = qs[32 * i + l];
        int q = half == 0 ? (byte & 15) : (byte >> 4);
        if (qh != nullptr) q |= ((qh[l] >> (2 * i + half)) & 1) << 4;
        y[64 * i + 32 * half + l] = ds * static_cast<float>(q) - ms;
      }
    }
  }
}

// Q6_K: y[256].
void DecodeQ6K(const uint8_t* block, float* y) {
  const float d = LoadBlockF16(block + 208);
  const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = block + 64 * h;
    const uint8_t* qh = block + 128 + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const int q[4] = {(ql[l] & 15) | ((qh[l] >> 0) & 3) << 4,
                        (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4,
                        (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4,
                        (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4};
      for (int k = 0; k < 4; ++k) {
        const int e = 128 * h + 32 * k + l;
        y[e] = d * static_cast<float>(scales[e / 16]) * static_cast<float>(q[k] - 32);
      }
    }
  }
}

}  // namespace

void DequantizeBlocks(WeightFormat format, const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const size_t i = static_cast<size_t>(b);
    switch (format) {
      case WeightFormat::kQ4_0: {
        const uint8_t* p = src + i * kQ4_0BlockBytes;
        DecodeQ32(p + 2, 0, LoadBlockF16(p), 8, false, 0.0f, dst + i * kQBlockElements);
        break;
      }
      case WeightFormat::kQ4_1: {
        const uint8_t* p = src + i * kQ4_1BlockBytes;
        DecodeQ32(p + 4, 0, LoadBlockF16(p), 0, true, LoadBlockF16(p + 2),
                  dst + i * kQBlockElements);
        break;
      }
      case WeightFormat::kQ5_0: {
        const uint8_t* p = src + i * kQ5_0BlockBytes;
        DecodeQ32(p + 6, LoadU32(p + 2), LoadBlockF16(p), 16, false, 0.0f,
                  dst + i * kQBlockElements);
        break;
      }
      case WeightFormat::kQ5_1: {
        const uint8_t* p = src + i * kQ5_1BlockBytes;
        DecodeQ32(p + 8, LoadU32(p + 4), LoadBlockF16(p), 0, true, LoadBlockF16(p + 2),
                  dst + i * kQBlockElements);
        break;
      }
      case WeightFormat::kQ4_K: {
        const uint8_t* p = src + i * kQ4_KBlockBytes;
        DecodeQ45K(p, nullptr, p + 16, dst + i * kQKBlockElements);
        break;
      }
      case WeightFormat::kQ5_K: {
        const uint8_t* p = src + i * kQ5_KBlockBytes;
        DecodeQ45K(p, p + 16, p + 48, dst + i * kQKBlockElements);
        break;
      }
      case WeightFormat::kQ6_K:
        DecodeQ6K(src + i * kQ6_KBlockBytes, dst + i * kQKBlockElements);
        break;
      case WeightFormat::kF32:
      case WeightFormat::kF16:
      case WeightFormat::kBF16:
      case WeightFormat::kQ8_0:
        KV_CHECK(false) << "not a block format handled here";
    }
  }
}

}  // namespace kvengine::kernels_ref
