#include "quant/weight_encode.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "quant/codec_params.h"
#include "quant/half.h"
#include "quant/weight_quantize.h"

namespace kvengine {
namespace {

// The byte layouts in the header are little-endian; stores below copy host-order integers.
static_assert(std::endian::native == std::endian::little, "synthetic weights assume little-endian");

using quant_internal::LoadU16;
using quant_internal::StoreU16;

}  // namespace

void QuantizeQ8_0(std::span<const float> x, std::span<uint8_t> out) {
  KV_CHECK(x.size() % kQ8_0BlockElements == 0);
  const size_t n_blocks = x.size() / kQ8_0BlockElements;
  KV_CHECK(out.size() == n_blocks * kQ8_0BlockBytes);
  for (size_t b = 0; b < n_blocks; ++b) {
    const float* xb = x.data() + b * kQ8_0BlockElements;
    uint8_t* ob = out.data() + b * kQ8_0BlockBytes;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_0BlockElements; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreU16(ob, F32ToF16(d));
    for (int j = 0; j < kQ8_0BlockElements; ++j) {
      // |xb[j] * id| <= 127 up to rounding of id, so the rounded value fits int8.
      const int q = std::clamp(static_cast<int>(std::round(xb[j] * id)), -127, 127);
      ob[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void DequantizeQ8_0(std::span<const uint8_t> in, std::span<float> out) {
  KV_CHECK(out.size() % kQ8_0BlockElements == 0);
  const size_t n_blocks = out.size() / kQ8_0BlockElements;
  KV_CHECK(in.size() == n_blocks * kQ8_0BlockBytes);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* ib = in.data() + b * kQ8_0BlockBytes;
    const float d = F16ToF32(LoadU16(ib));
    for (int j = 0; j < kQ8_0BlockElements; ++j) {
      out[b * kQ8_0BlockElements + j] = d * static_cast<float>(static_cast<int8_t>(ib[2 + j]));
    }
  }
}

bool IsEncodableWeightType(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16 ||
         type == GgmlType::kQ8_0 || IsQuantizedBlockType(type);
}

uint64_t EncodedWeightBytes(GgmlType type, uint64_t n) {
  KV_CHECK(IsEncodableWeightType(type)) << "no synthetic encoder for " << GgmlTypeName(type);
  Result<uint64_t> bytes = GgmlRowBytes(type, n);
  KV_CHECK(bytes.ok()) << bytes.status().ToString();
  return *bytes;
}

void EncodeWeights(GgmlType type, std::span<const float> x, std::span<uint8_t> out) {
  KV_CHECK(out.size() == EncodedWeightBytes(type, x.size()));
  if (type == GgmlType::kF32) {
    std::memcpy(out.data(), x.data(), out.size());
  } else if (type == GgmlType::kF16) {
    for (size_t i = 0; i < x.size(); ++i) StoreU16(out.data() + 2 * i, F32ToF16(x[i]));
  } else if (type == GgmlType::kBF16) {
    for (size_t i = 0; i < x.size(); ++i) StoreU16(out.data() + 2 * i, F32ToBf16(x[i]));
  } else if (type == GgmlType::kQ8_0) {
    QuantizeQ8_0(x, out);
  } else {
    QuantizeBlocks(type, x, out);  // EncodedWeightBytes checked the type.
  }
}

void DecodeWeights(GgmlType type, std::span<const uint8_t> in, std::span<float> out) {
  KV_CHECK(in.size() == EncodedWeightBytes(type, out.size()));
  if (type == GgmlType::kF32) {
    std::memcpy(out.data(), in.data(), in.size());
  } else if (type == GgmlType::kF16) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = F16ToF32(LoadU16(in.data() + 2 * i));
  } else if (type == GgmlType::kBF16) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = Bf16ToF32(LoadU16(in.data() + 2 * i));
  } else {
    KV_CHECK(type == GgmlType::kQ8_0) << "no synthetic decoder for " << GgmlTypeName(type)
                                      << " (kernels_ref::DequantizeBlocks decodes it)";
    DequantizeQ8_0(in, out);
  }
}

}  // namespace kvengine
