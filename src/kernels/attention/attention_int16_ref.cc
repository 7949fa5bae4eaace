// The scalar specification of the int16 steps (attention_int16.h): exact int64 sums (equal to the
// SIMD versions' int32 ones, which cannot overflow where Int8Int16Applies), then the float
// operations of the specification in its order. Slow and plain; tests hold the SIMD steps to it
// bit for bit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/attention_int16.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace int16_ref {

constexpr float kInt16Max = 32767.0f;

float LoadScale(const uint8_t* p) { return F16ToF32(quant_internal::LoadU16(p)); }

// round(v) to nearest, ties to even (the default rounding mode, as vcvtps2dq), saturated to int16.
int16_t RoundToInt16(float v) {
  const float r = std::nearbyint(v);
  return int16_t(std::clamp(r, -32768.0f, 32767.0f));
}

int8_t Code(const uint8_t* row, size_t i) { return static_cast<int8_t>(row[i]); }

void QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  float amax = 0.0f;
  for (size_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(q[i]));
  const float inv = amax > 0.0f && std::isfinite(amax) ? kInt16Max / amax : 0.0f;
  for (size_t i = 0; i < d; ++i) q16[i] = RoundToInt16(q[i] * inv);
  *scale = amax / kInt16Max;
}

void Scores(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const int16_t* q16,
            const float* q_scale, int heads, size_t d, float* scores, const KvPrefetch& /*pf*/) {
  for (int h = 0; h < heads; ++h) {
    const int16_t* qh = q16 + size_t(h) * d;
    for (int t = 0; t < n; ++t) {
      int64_t sum = 0;
      for (size_t i = 0; i < d; ++i) sum += int64_t(qh[i]) * Code(rows[t].k_data, i);
      scores[h * kAttentionChunk + t] =
          (float(int32_t(sum)) * q_scale[h]) * LoadScale(rows[t].k_scale);
    }
  }
}

void Accumulate(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride,
                float* /*l*/) {  // l: the int16 weights' rounding is not folded into it.
  std::vector<float> wf(static_cast<size_t>(n));
  std::vector<int16_t> w(static_cast<size_t>(n));
  std::vector<int64_t> sums(d);
  for (int h = 0; h < heads; ++h) {
    float wmax = 0.0f;
    for (int t = 0; t < n; ++t) {
      wf[size_t(t)] = p[h * kAttentionChunk + t] * LoadScale(rows[t].v_scale);
      wmax = std::max(wmax, wf[size_t(t)]);
    }
    const float s = wmax / kInt16Max;
    const float inv = wmax > 0.0f ? kInt16Max / wmax : 0.0f;
    for (int t = 0; t < n; ++t) w[size_t(t)] = RoundToInt16(wf[size_t(t)] * inv);
    std::fill(sums.begin(), sums.end(), 0);
    for (int t = 0; t < n; ++t) {
      for (size_t e = 0; e < d; ++e) sums[e] += int64_t(w[size_t(t)]) * Code(rows[t].v_data, e);
    }
    float* dst = acc + size_t(h) * acc_stride;
    for (size_t i = 0; i < d; ++i) {
      const float sum = float(int32_t(sums[Int8Int16Element(i)]));
      dst[i] = std::fma(sum, s, dst[i] * alpha[h]);
    }
  }
}

}  // namespace int16_ref
}  // namespace

bool Int8Int16Applies(const KvLayerView& kv) {
  return kv.k_dtype == KvDtype::kInt8 && kv.v_dtype == KvDtype::kInt8 && kv.k_scale_bytes == 2 &&
         kv.v_scale_bytes == 2 && kv.head_dim_k % 32 == 0 && kv.head_dim_v % 32 == 0 &&
         kv.head_dim_k <= 512;
}

const LowPrecisionSteps& Int8StepsScalar() {
  static const LowPrecisionSteps steps{"scalar", &int16_ref::QuantizeQuery, &int16_ref::Scores,
                                       &int16_ref::Accumulate, &Int8Int16Element};
  return steps;
}

}  // namespace kvengine
