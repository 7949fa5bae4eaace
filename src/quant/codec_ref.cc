// Scalar reference codecs. One element at a time, straight from the definitions; the SIMD codecs in
// codec_hwy.cc must produce the same bytes (encode) and the same floats (decode).
#include "quant/codec_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "quant/codec.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine::ref {
namespace {

using quant_internal::Int4Params;
using quant_internal::kInt4QMax;
using quant_internal::kInt8QMax;
using quant_internal::LoadInt4Params;
using quant_internal::LoadU16;
using quant_internal::StoreU16;
using quant_internal::SymmetricScale;

float AbsMaxFinite(const float* x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(x[i]));
  }
  return amax;
}

// RNE of v clamped to [lo, hi]; NaN (from a NaN input, or inf * 0) becomes 0 first.
int QuantizeClamped(float v, float lo, float hi) {
  if (std::isnan(v)) v = 0.0f;
  return static_cast<int>(std::nearbyint(std::clamp(v, lo, hi)));
}

void EncodeSymmetric(KvDtype dtype, const float* x, int n, uint8_t* data, uint8_t* scale) {
  float qmax = kInt8QMax;
  if (dtype == KvDtype::kFp8E4M3) qmax = kFp8E4M3Max;
  if (dtype == KvDtype::kFp8E5M2) qmax = kFp8E5M2Max;
  const SymmetricScale s = quant_internal::MakeSymmetricScale(AbsMaxFinite(x, n), qmax);
  StoreU16(scale, s.scale_f16);
  for (int i = 0; i < n; ++i) {
    const float v = x[i] * s.inv_scale;
    if (dtype == KvDtype::kFp8E4M3) {
      data[i] = F32ToFp8E4M3(v);
    } else if (dtype == KvDtype::kFp8E5M2) {
      data[i] = F32ToFp8E5M2(v);
    } else {
      data[i] =
          static_cast<uint8_t>(static_cast<int8_t>(QuantizeClamped(v, -kInt8QMax, kInt8QMax)));
    }
  }
}

void EncodeInt4(const float* x, int n, uint8_t* data, uint8_t* scale) {
  const int g = Int4GroupSize(n);
  std::memset(data, 0, static_cast<size_t>(n + 1) / 2);
  for (int group = 0; group * g < n; ++group) {
    const float* xg = x + group * g;
    float lo = std::numeric_limits<float>::infinity();
    float hi = -lo;
    for (int j = 0; j < g; ++j) {
      if (!std::isfinite(xg[j])) continue;
      lo = std::min(lo, xg[j]);
      hi = std::max(hi, xg[j]);
    }
    const Int4Params p = quant_internal::MakeInt4Params(lo, hi);
    StoreU16(scale + 4 * group, p.scale_f16);
    StoreU16(scale + 4 * group + 2, p.min_f16);
    for (int j = 0; j < g; ++j) {
      const int i = group * g + j;
      const int code = QuantizeClamped((xg[j] - p.min) * p.inv_scale, 0.0f, kInt4QMax);
      data[i / 2] |= static_cast<uint8_t>(code << (4 * (i % 2)));
    }
  }
}

// Decodes elements [begin, end) of a row of n into out[0, end - begin).
void DecodeRange(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n, int begin,
                 int end, float* out) {
  switch (dtype) {
    case KvDtype::kF32:
      std::memcpy(out, data + 4 * begin, 4 * static_cast<size_t>(end - begin));
      return;
    case KvDtype::kF16:
      for (int i = begin; i < end; ++i) out[i - begin] = F16ToF32(LoadU16(data + 2 * i));
      return;
    case KvDtype::kBF16:
      for (int i = begin; i < end; ++i) out[i - begin] = Bf16ToF32(LoadU16(data + 2 * i));
      return;
    case KvDtype::kFp8E4M3: {
      const float s = F16ToF32(LoadU16(scale));
      for (int i = begin; i < end; ++i) out[i - begin] = Fp8E4M3ToF32(data[i]) * s;
      return;
    }
    case KvDtype::kFp8E5M2: {
      const float s = F16ToF32(LoadU16(scale));
      for (int i = begin; i < end; ++i) out[i - begin] = Fp8E5M2ToF32(data[i]) * s;
      return;
    }
    case KvDtype::kInt8: {
      const float s = F16ToF32(LoadU16(scale));
      for (int i = begin; i < end; ++i) {
        out[i - begin] = static_cast<float>(static_cast<int8_t>(data[i])) * s;
      }
      return;
    }
    case KvDtype::kInt4: {
      const int g = Int4GroupSize(n);
      Int4Params p = LoadInt4Params(scale, begin / g);
      for (int i = begin; i < end; ++i) {
        if (i % g == 0) p = LoadInt4Params(scale, i / g);
        const int code = (data[i / 2] >> (4 * (i % 2))) & 0xF;
        out[i - begin] = p.min + static_cast<float>(code) * p.scale;
      }
      return;
    }
  }
  KV_CHECK(false) << "invalid KvDtype " << static_cast<int>(dtype);
}

// Dot and Axpy decode in chunks of this many elements.
constexpr int kChunk = 256;

}  // namespace

void EncodeRow(KvDtype dtype, const float* x, int n, uint8_t* data, uint8_t* scale) {
  KV_DCHECK(n >= 1);
  switch (dtype) {
    case KvDtype::kF32:
      std::memcpy(data, x, 4 * static_cast<size_t>(n));
      return;
    case KvDtype::kF16:
      for (int i = 0; i < n; ++i) StoreU16(data + 2 * i, F32ToF16(x[i]));
      return;
    case KvDtype::kBF16:
      for (int i = 0; i < n; ++i) StoreU16(data + 2 * i, F32ToBf16(x[i]));
      return;
    case KvDtype::kFp8E4M3:
    case KvDtype::kFp8E5M2:
    case KvDtype::kInt8:
      EncodeSymmetric(dtype, x, n, data, scale);
      return;
    case KvDtype::kInt4:
      EncodeInt4(x, n, data, scale);
      return;
  }
  KV_CHECK(false) << "invalid KvDtype " << static_cast<int>(dtype);
}

void DecodeRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n, float* out) {
  KV_DCHECK(n >= 1);
  DecodeRange(dtype, data, scale, n, 0, n, out);
}

float DotRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, const float* q, int n) {
  KV_DCHECK(n >= 1);
  float buf[kChunk];
  double sum = 0.0;
  for (int begin = 0; begin < n; begin += kChunk) {
    const int end = std::min(n, begin + kChunk);
    DecodeRange(dtype, data, scale, n, begin, end, buf);
    for (int i = begin; i < end; ++i) sum += static_cast<double>(buf[i - begin]) * q[i];
  }
  return static_cast<float>(sum);
}

void AxpyRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, float a, int n, float* acc) {
  KV_DCHECK(n >= 1);
  float buf[kChunk];
  for (int begin = 0; begin < n; begin += kChunk) {
    const int end = std::min(n, begin + kChunk);
    DecodeRange(dtype, data, scale, n, begin, end, buf);
    for (int i = begin; i < end; ++i) acc[i] += a * buf[i - begin];
  }
}

}  // namespace kvengine::ref

namespace kvengine {

RowCodecKernels ReferenceRowCodecKernels() {
  return {"ref", 0, &ref::EncodeRow, &ref::DecodeRow, &ref::DotRow, &ref::AxpyRow};
}

}  // namespace kvengine
