// Scalar reference of the weight kernels (kernel_ref.h): decode exactly, then plain dot products.
#include <cstring>
#include <vector>

#include "base/check.h"
#include "quant/dequant_ref.h"
#include "kernels/kernel_ref.h"
#include "kernels/quant_dot.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine::kernels_ref {

using quant_internal::LoadU16;

void DequantizeRow(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  const std::optional<WeightFormat> format = WeightFormatOf(type);
  KV_CHECK(format.has_value()) << "no kernel for weight type " << GgmlTypeName(type);
  switch (*format) {
    case WeightFormat::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case WeightFormat::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(LoadU16(src + 2 * i));
      return;
    case WeightFormat::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(LoadU16(src + 2 * i));
      return;
    case WeightFormat::kQ8_0:
      KV_CHECK(n % kQ8_0BlockElements == 0) << "q8_0 row of " << n << " elements";
      for (int64_t b = 0; b < n / kQ8_0BlockElements; ++b) {
        const uint8_t* block = src + static_cast<size_t>(b) * kQ8_0BlockBytes;
        const float d = F16ToF32(LoadU16(block));
        for (int64_t j = 0; j < kQ8_0BlockElements; ++j) {
          const auto q = static_cast<int8_t>(block[2 + j]);
          dst[b * kQ8_0BlockElements + j] = d * static_cast<float>(q);
        }
      }
      return;
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ5_0:
    case WeightFormat::kQ5_1:
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K: {
      const int64_t block = GetGgmlTypeTraits(type).block_size;
      KV_CHECK(n % block == 0) << GgmlTypeName(type) << " row of " << n << " elements";
      DequantizeBlocks(*format, src, n / block, dst);
      return;
    }
  }
}

void MatMulRows(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y) {
  const std::optional<WeightFormat> format = WeightFormatOf(w.type);
  if (format.has_value() && ActivationFormatOf(*format).has_value()) {
    return kernels_internal::QuantMatMulRowsFromFloat(&QuantDotTokens, &QuantDotRange, w, x,
                                                      n_tokens, row_begin, row_end, y);
  }
  std::vector<float> row(static_cast<size_t>(w.cols));  // One decoded weight row.
  for (int64_t r = row_begin; r < row_end; ++r) {
    ForEachRowChunk(w, r, [&](const uint8_t* chunk, int64_t c0, int64_t width) {
      kernels_ref::DequantizeRow(w.type, chunk, width, row.data() + c0);
    });
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.cols;
      float sum = 0.0f;
      for (int64_t c = 0; c < w.cols; ++c) sum += row[static_cast<size_t>(c)] * xt[c];
      y[t * w.rows + r] = sum;
    }
  }
}

}  // namespace kvengine::kernels_ref
