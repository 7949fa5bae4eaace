// Activation quantizers and the scalar reference of the quantized dot products (quant_dot.h).
// The library compiles with -ffp-contract=off: each float operation below rounds as written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/kernel_ref.h"
#include "kernels/quant_dot.h"
#include "quant/weight_blocks.h"
#include "quant/half.h"

namespace kvengine {
namespace {

float RoundToF16(float v) { return F16ToF32(F32ToF16(v)); }

// ggml's nearest_int: round half to even by adding 1.5 * 2^23 (valid for |v| < 2^22).
int NearestInt(float v) {
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

void QuantizeQ8Blocks32(const float* x, int64_t cols, bool with_sum, uint8_t* dst) {
  const int64_t nb = cols / 32;
  auto* q = reinterpret_cast<int8_t*>(dst);
  float* d_out = reinterpret_cast<float*>(dst + cols);
  float* s_out = d_out + nb;
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    bool nan = false;  // A NaN activation makes the block's scale NaN, so that it propagates.
    for (int j = 0; j < 32; ++j) {
      const float r = std::nearbyint(xb[j] * id);  // Half to even; |r| <= 127 unless NaN.
      nan = nan || std::isnan(r);
      const int v = std::isnan(r) ? 0 : static_cast<int>(r);
      q[32 * b + j] = static_cast<int8_t>(v);
      sum += v;
    }
    d_out[b] = nan ? std::nanf("") : RoundToF16(d);
    s_out[b] = with_sum ? RoundToF16(d * static_cast<float>(sum)) : 0.0f;
  }
}

void QuantizeQ8K(const float* x, int64_t cols, uint8_t* dst) {
  for (int64_t b = 0; b < cols / 256; ++b) {
    const float* xb = x + 256 * b;
    Q8KBlock blk{};
    float amax = 0.0f;
    float max = 0.0f;
    bool nan = false;  // As for q8_0: a NaN makes d NaN (codes 0), so that it propagates.
    for (int j = 0; j < 256; ++j) {
      nan = nan || std::isnan(xb[j]);
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    if (nan) {
      blk.d = std::nanf("");
    } else if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < 256; ++j) {
        blk.qs[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * xb[j])));
      }
      for (int k = 0; k < 16; ++k) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += blk.qs[16 * k + j];
        blk.bsums[k] = static_cast<int16_t>(sum);
      }
      blk.d = 1.0f / iscale;
    }
    std::memcpy(dst + static_cast<size_t>(b) * sizeof(Q8KBlock), &blk, sizeof(blk));
  }
}

}  // namespace

std::optional<ActivationFormat> ActivationFormatOf(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return std::nullopt;
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ5_0:
      return ActivationFormat::kQ8_0;
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ5_1:
      return ActivationFormat::kQ8_1;
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K:
      return ActivationFormat::kQ8_K;
  }
  return std::nullopt;
}

size_t ActivationRowBytes(ActivationFormat format, int64_t cols) {
  const auto n = static_cast<size_t>(cols);
  switch (format) {
    case ActivationFormat::kQ8_0:
    case ActivationFormat::kQ8_1:
      return n + (n / 32) * 2 * sizeof(float);
    case ActivationFormat::kQ8_K:
      return (n / 256) * sizeof(Q8KBlock);
  }
  return 0;
}

void QuantizeActivations(ActivationFormat format, const float* x, int64_t cols, uint8_t* dst) {
  switch (format) {
    case ActivationFormat::kQ8_0:
    case ActivationFormat::kQ8_1:
      KV_CHECK(cols % 32 == 0) << cols;
      return QuantizeQ8Blocks32(x, cols, format == ActivationFormat::kQ8_1, dst);
    case ActivationFormat::kQ8_K:
      KV_CHECK(cols % 256 == 0) << cols;
      return QuantizeQ8K(x, cols, dst);
  }
}

float QuantDotFinish(WeightFormat format, const QuantDotState& state) {
  const float* a = state.lane;
  switch (format) {
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K:
      return a[0];
    default:
      return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
  }
}

namespace kernels_internal {

void QuantMatMulRows(QuantDotTokensFn dot, QuantDotRangeFn range, const WeightView& w,
                     const uint8_t* xq, size_t xq_stride, int64_t n_tokens, int64_t row_begin,
                     int64_t row_end, float* y) {
  const std::optional<WeightFormat> format = WeightFormatOf(w.type);
  KV_CHECK(format.has_value() && ActivationFormatOf(*format).has_value()) << GgmlTypeName(w.type);
  if (w.col_block == 0) {
    // Rows outer, tokens inner: a row (a few KiB) stays in L1 while every token reads it.
    for (int64_t r = row_begin; r < row_end; ++r) {
      dot(*format, w.data + static_cast<size_t>(r) * w.row_bytes, w.cols, xq, xq_stride, n_tokens,
          y + r, w.rows);
    }
    return;
  }
  // Column blocks: rows in groups whose states (rows x tokens, 32 KiB) stay near L1; within a
  // group, each block of every row before the next block, so that the block's activations serve
  // all of the group's rows from L1.
  constexpr int64_t kGroupStates = 1024;
  const int64_t group = std::max<int64_t>(1, kGroupStates / std::max<int64_t>(1, n_tokens));
  thread_local std::vector<QuantDotState> states;
  for (int64_t g0 = row_begin; g0 < row_end; g0 += group) {
    const int64_t g1 = std::min(row_end, g0 + group);
    states.assign(static_cast<size_t>((g1 - g0) * n_tokens), QuantDotState{});
    for (int64_t j = 0; j < NumColumnBlocks(w); ++j) {
      const ColumnBlockView b = ColumnBlockOf(w, j);
      for (int64_t r = g0; r < g1; ++r) {
        range(*format, b.base + static_cast<size_t>(r) * b.stride, b.c0, b.width, w.cols, xq,
              xq_stride, n_tokens, states.data() + (r - g0) * n_tokens);
      }
    }
    for (int64_t r = g0; r < g1; ++r) {
      const QuantDotState* s = states.data() + (r - g0) * n_tokens;
      for (int64_t t = 0; t < n_tokens; ++t) y[t * w.rows + r] = QuantDotFinish(*format, s[t]);
    }
  }
}

void QuantMatMulRowsFromFloat(QuantDotTokensFn dot, QuantDotRangeFn range, const WeightView& w,
                              const float* x, int64_t n_tokens, int64_t row_begin, int64_t row_end,
                              float* y) {
  const std::optional<WeightFormat> format = WeightFormatOf(w.type);
  KV_CHECK(format.has_value() && ActivationFormatOf(*format).has_value()) << GgmlTypeName(w.type);
  const ActivationFormat af = *ActivationFormatOf(*format);
  const size_t stride = ActivationRowBytes(af, w.cols);
  std::vector<uint8_t> xq(stride * static_cast<size_t>(n_tokens));  // n_tokens rows of stride.
  for (int64_t t = 0; t < n_tokens; ++t) {
    QuantizeActivations(af, x + t * w.cols, w.cols, xq.data() + static_cast<size_t>(t) * stride);
  }
  QuantMatMulRows(dot, range, w, xq.data(), stride, n_tokens, row_begin, row_end, y);
}

}  // namespace kernels_internal

namespace kernels_ref {
namespace {

// Codes of one 32-element block (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) as ints, with the f16 fields:
// dw (scale) and mw (min, 0 for the symmetric formats).
void BlockCodes32(WeightFormat format, const uint8_t* p, int* code, float* dw, float* mw) {
  *dw = LoadBlockF16(p);
  *mw = 0.0f;
  const uint8_t* qs = nullptr;
  uint32_t qh = 0;
  int offset = 0;
  switch (format) {
    case WeightFormat::kQ8_0:
      for (int j = 0; j < 32; ++j) code[j] = static_cast<int8_t>(p[2 + j]);
      return;
    case WeightFormat::kQ4_0:
      qs = p + 2;
      offset = 8;
      break;
    case WeightFormat::kQ4_1:
      qs = p + 4;
      *mw = LoadBlockF16(p + 2);
      break;
    case WeightFormat::kQ5_0:
      std::memcpy(&qh, p + 2, 4);
      qs = p + 6;
      offset = 16;
      break;
    case WeightFormat::kQ5_1:
      *mw = LoadBlockF16(p + 2);
      std::memcpy(&qh, p + 4, 4);
      qs = p + 8;
      break;
    default:
      KV_CHECK(false) << "not a 32-element block format";
  }
  for (int j = 0; j < 16; ++j) {
    code[j] = ((qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4)) - offset;
    code[j + 16] = ((qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - offset;
  }
}

size_t BlockBytes(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
      return kQ8_0BlockBytes;
    case WeightFormat::kQ4_0:
      return kQ4_0BlockBytes;
    case WeightFormat::kQ4_1:
      return kQ4_1BlockBytes;
    case WeightFormat::kQ5_0:
      return kQ5_0BlockBytes;
    case WeightFormat::kQ5_1:
      return kQ5_1BlockBytes;
    case WeightFormat::kQ4_K:
      return kQ4_KBlockBytes;
    case WeightFormat::kQ5_K:
      return kQ5_KBlockBytes;
    case WeightFormat::kQ6_K:
      return kQ6_KBlockBytes;
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      break;
  }
  return 0;
}

// Dot32's blocks [c0 / 32, (c0 + width) / 32) of the row (`chunk` at the first), into the lane
// accumulators acc. The row's last range also adds the +0 terms of the blocks past its end, up
// to a multiple of 8.
void Dot32Range(WeightFormat format, const uint8_t* chunk, int64_t c0, int64_t width, int64_t cols,
                const uint8_t* xq, float* acc) {
  const int64_t nb = cols / 32;
  const int64_t b0 = c0 / 32;
  const int64_t b1 = c0 + width == cols ? (nb + 7) / 8 * 8 : (c0 + width) / 32;
  const size_t block_bytes = BlockBytes(format);
  const auto* q = reinterpret_cast<const int8_t*>(xq);
  const auto* dx = reinterpret_cast<const float*>(xq + cols);
  const float* sx = dx + nb;
  for (int64_t b = b0; b < b1; ++b) {
    float term = 0.0f;
    if (b < nb) {
      int code[32];
      float dw, mw;
      BlockCodes32(format, chunk + static_cast<size_t>(b - b0) * block_bytes, code, &dw, &mw);
      int32_t isum = 0;
      for (int j = 0; j < 32; ++j) isum += code[j] * q[32 * b + j];
      term = (dw * dx[b]) * static_cast<float>(isum);
      if (format == WeightFormat::kQ4_1 || format == WeightFormat::kQ5_1) term = term + mw * sx[b];
    }
    acc[b % 8] = acc[b % 8] + term;
  }
}

// DotK's super-blocks [c0 / 256, (c0 + width) / 256) of the row (`chunk` at the first), into
// acc.
void DotKRange(WeightFormat format, const uint8_t* chunk, int64_t c0, int64_t width,
               const uint8_t* xq, float* acc_io) {
  const size_t block_bytes = BlockBytes(format);
  float acc = *acc_io;
  for (int64_t b = c0 / 256; b < (c0 + width) / 256; ++b) {
    const uint8_t* p = chunk + static_cast<size_t>(b - c0 / 256) * block_bytes;
    Q8KBlock x;
    std::memcpy(&x, xq + static_cast<size_t>(b) * sizeof(Q8KBlock), sizeof(x));
    int y[256];  // Q6_K codes 0 .. 63.
    int32_t isum = 0;
    int32_t msum = 0;
    if (format == WeightFormat::kQ6_K) {
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = p + 64 * h;
        const uint8_t* qh = p + 128 + 32 * h;
        for (int l = 0; l < 32; ++l) {
          y[128 * h + l] = (ql[l] & 15) | ((qh[l] >> 0) & 3) << 4;
          y[128 * h + 32 + l] = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4;
          y[128 * h + 64 + l] = (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4;
          y[128 * h + 96 + l] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4;
        }
      }
      const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
      for (int s = 0; s < 16; ++s) {
        int32_t dot = 0;
        for (int j = 0; j < 16; ++j) dot += y[16 * s + j] * x.qs[16 * s + j];
        isum += scales[s] * (dot - 32 * x.bsums[s]);
      }
      acc = acc + (LoadBlockF16(p + 208) * x.d) * static_cast<float>(isum);
      continue;
    }
    const uint8_t* qh = format == WeightFormat::kQ5_K ? p + 16 : nullptr;
    const uint8_t* qs = p + (format == WeightFormat::kQ5_K ? 48 : 16);
    for (int i = 0; i < 4; ++i) {
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * i + half;
        uint8_t sc, mn;
        KQuantScaleMin(p + 4, s, &sc, &mn);
        int32_t dot = 0;
        for (int l = 0; l < 32; ++l) {
          int c = half == 0 ? (qs[32 * i + l] & 15) : (qs[32 * i + l] >> 4);
          if (qh != nullptr) c |= ((qh[l] >> s) & 1) << 4;
          dot += c * x.qs[32 * s + l];
        }
        isum += sc * dot;
        msum += mn * (x.bsums[2 * s] + x.bsums[2 * s + 1]);
      }
    }
    acc = (acc + (LoadBlockF16(p) * x.d) * static_cast<float>(isum)) -
          (LoadBlockF16(p + 2) * x.d) * static_cast<float>(msum);
  }
  *acc_io = acc;
}

}  // namespace

void QuantDotRange(WeightFormat format, const uint8_t* chunk, int64_t c0, int64_t width,
                   int64_t cols, const uint8_t* xq, size_t xq_stride, int64_t n_tokens,
                   QuantDotState* state) {
  KV_CHECK(c0 % kQuantRangeAlign == 0 && (width % kQuantRangeAlign == 0 || c0 + width == cols))
      << "column range [" << c0 << ", " << c0 + width << ") of " << cols;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const uint8_t* x = xq + static_cast<size_t>(t) * xq_stride;
    switch (format) {
      case WeightFormat::kQ8_0:
      case WeightFormat::kQ4_0:
      case WeightFormat::kQ4_1:
      case WeightFormat::kQ5_0:
      case WeightFormat::kQ5_1:
        Dot32Range(format, chunk, c0, width, cols, x, state[t].lane);
        continue;
      case WeightFormat::kQ4_K:
      case WeightFormat::kQ5_K:
      case WeightFormat::kQ6_K:
        DotKRange(format, chunk, c0, width, x, &state[t].lane[0]);
        continue;
      case WeightFormat::kF32:
      case WeightFormat::kF16:
      case WeightFormat::kBF16:
        break;
    }
    KV_CHECK(false) << "no quantized dot for a float format";
  }
}

float QuantDot(WeightFormat format, const uint8_t* row, const uint8_t* xq, int64_t cols) {
  QuantDotState state;
  QuantDotRange(format, row, 0, cols, cols, xq, 0, 1, &state);
  return QuantDotFinish(format, state);
}

void QuantDotTokens(WeightFormat format, const uint8_t* row, int64_t cols, const uint8_t* xq,
                    size_t xq_stride, int64_t n_tokens, float* y, int64_t y_stride) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    y[t * y_stride] = QuantDot(format, row, xq + static_cast<size_t>(t) * xq_stride, cols);
  }
}

}  // namespace kernels_ref
}  // namespace kvengine
