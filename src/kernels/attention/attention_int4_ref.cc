// The scalar specification of the int4 score steps (attention_int4.h): exact integer group sums,
// then the float operations in the order the header gives. Tests hold the SIMD steps to it bit
// for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention/attention_int4.h"
#include "quant/codec_params.h"
#include "quant/half.h"
#include "quant/kv_dtype.h"

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace int4_ref {

constexpr float kInt8Max = 127.0f;
constexpr float kInt16Max = 32767.0f;

int Code(const uint8_t* row, size_t i) { return (row[i / 2] >> (4 * (i % 2))) & 15; }

void Scores(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const int16_t* q16,
            const float* q_scale, int heads, size_t d, float* scores, const KvPrefetch& /*pf*/) {
  const size_t groups = d / 32;
  for (int h = 0; h < heads; ++h) {
    const int16_t* qh = q16 + size_t(h) * d;
    int8_t q8[512];
    std::memcpy(q8, qh, d);  // Bytes of the encoding, in its order.
    for (int t = 0; t < n; ++t) {
      float f[2] = {0.0f, 0.0f};
      for (size_t g = 0; g < groups; ++g) {
        int32_t sum = 0;
        for (size_t i = 0; i < d; ++i) {
          const size_t e = Int4Int8QElement(i);
          if (e / 32 == g) sum += int32_t(q8[i]) * Code(rows[t].k_data, e);
        }
        const quant_internal::Int4Params p =
            quant_internal::LoadInt4Params(rows[t].k_scale, int(g));
        f[g % 2] = std::fma(float(sum), p.scale, f[g % 2]);
        f[g % 2] = std::fma(p.min, Int4Int8QuerySum(qh, d, g), f[g % 2]);
      }
      scores[h * kAttentionChunk + t] = (f[0] + f[1]) * q_scale[h];
    }
  }
}

void Accumulate(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride,
                float* /*l*/) {  // l: the int16 weights' rounding is not folded into it.
  const size_t groups = d / 32;
  std::vector<int32_t> w16(static_cast<size_t>(n));
  for (int h = 0; h < heads; ++h) {
    const float* ph = p + h * kAttentionChunk;
    float* dst = acc + size_t(h) * acc_stride;
    for (size_t g = 0; g < groups; ++g) {
      float wmax = 0.0f;
      double mins = 0.0;
      for (int t = 0; t < n; ++t) {
        const quant_internal::Int4Params pr =
            quant_internal::LoadInt4Params(rows[t].v_scale, int(g));
        wmax = std::fmax(wmax, ph[t] * pr.scale);
        mins += double(ph[t]) * pr.min;
      }
      const float inv = wmax > 0.0f ? kInt16Max / wmax : 0.0f;
      for (int t = 0; t < n; ++t) {
        const float s = quant_internal::LoadInt4Params(rows[t].v_scale, int(g)).scale;
        w16[size_t(t)] = int32_t(std::nearbyint(ph[t] * s * inv));
      }
      const double scale = double(wmax / kInt16Max);
      for (size_t i = 0; i < d; ++i) {
        const size_t e = Int4Int8Element(i);
        if (e / 32 != g) continue;
        int32_t sum = 0;
        for (int t = 0; t < n; ++t) sum += w16[size_t(t)] * Code(rows[t].v_data, e);
        dst[i] = float(double(dst[i]) * alpha[h] + (double(sum) * scale + mins));
      }
    }
  }
}

}  // namespace int4_ref
}  // namespace

void Int4Int8QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  float amax = 0.0f;
  bool finite = true;
  for (size_t i = 0; i < d; ++i) {
    finite = finite && std::isfinite(q[i]);
    amax = std::fmax(amax, std::fabs(q[i]));
  }
  const float inv = amax > 0.0f && finite ? int4_ref::kInt8Max / amax : 0.0f;
  uint8_t* bytes = reinterpret_cast<uint8_t*>(q16);
  std::vector<float> sums(d / 32, 0.0f);
  for (size_t i = 0; i < d; ++i) {
    const size_t e = Int4Int8QElement(i);
    // Round to nearest even; |q * inv| <= 127 up to rounding, clamped for the slack.
    const float c =
        finite ? std::clamp(std::nearbyint(q[e] * inv), -int4_ref::kInt8Max, int4_ref::kInt8Max)
               : 0.0f;
    bytes[i] = uint8_t(int8_t(c));
    sums[e / 32] += c;  // Small integers: exact.
  }
  std::memcpy(bytes + d, sums.data(), sums.size() * sizeof(float));
  *scale = finite ? amax / int4_ref::kInt8Max : NAN;
}

bool Int4Int8Applies(const KvLayerView& kv) {
  return kv.k_dtype == KvDtype::kInt4 && kv.head_dim_k % 64 == 0 && kv.head_dim_k <= 512 &&
         Int4GroupSize(kv.head_dim_k) == 32 && kv.k_scale_bytes == size_t(kv.head_dim_k) / 8;
}

bool Int4Int8ValuesApply(const KvLayerView& kv) {
  const int dv = kv.head_dim_v;
  return Int4Int8Applies(kv) && kv.v_dtype == KvDtype::kInt4 &&
         (dv == 64 || dv == 128 || dv == 256) && kv.v_scale_bytes == size_t(dv) / 8;
}

const LowPrecisionSteps& Int4StepsScalar(bool values) {
  static const LowPrecisionSteps k{"scalar", &Int4Int8QuantizeQuery, &int4_ref::Scores, nullptr,
                                   nullptr};
  static const LowPrecisionSteps kv{"scalar", &Int4Int8QuantizeQuery, &int4_ref::Scores,
                                    &int4_ref::Accumulate, &Int4Int8Element};
  return values ? kv : k;
}

}  // namespace kvengine
