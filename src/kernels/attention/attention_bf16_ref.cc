// The scalar specification of the bf16 steps for fp8 KV (attention_bf16.h): the fp8 values
// (quant/half.h, the codecs' decoder), q and the weights rounded by Bf16, and the sums in double.
// Slow and plain; tests hold the SIMD steps to it within the rounding of f32 sums.
#include <vector>

#include "kernels/attention/attention_bf16.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace bf16_ref {

float LoadScale(const uint8_t* p) { return F16ToF32(quant_internal::LoadU16(p)); }

template <bool kE4M3>
double Value(const uint8_t* row, size_t e) {
  return kE4M3 ? Fp8E4M3ToF32(row[e]) : Fp8E5M2ToF32(row[e]);
}

template <bool kE4M3>
void Scores(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const int16_t* q16,
            const float* /*q_scale*/, int heads, size_t d, float* scores,
            const KvPrefetch& /*pf*/) {
  for (int h = 0; h < heads; ++h) {
    const int16_t* qh = q16 + size_t(h) * d;
    for (int t = 0; t < n; ++t) {
      double sum = 0.0;
      for (size_t i = 0; i < d; ++i) {
        sum +=
            double(Bf16ToF32(uint16_t(qh[i]))) * Value<kE4M3>(rows[t].k_data, Fp8Bf16KElement(i));
      }
      scores[h * kAttentionChunk + t] = float(sum * double(LoadScale(rows[t].k_scale)));
    }
  }
}

template <bool kE4M3>
void Accumulate(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride, float* l) {
  std::vector<double> w(static_cast<size_t>(n));
  for (int h = 0; h < heads; ++h) {
    double moved = 0.0;  // sum_t (w_t / v_scale_t - p_t) over rows of nonzero scale.
    for (int t = 0; t < n; ++t) {
      const float pt = p[h * kAttentionChunk + t], st = LoadScale(rows[t].v_scale);
      w[size_t(t)] = Bf16ToF32(Bf16(pt * st));
      if (st != 0.0f) moved += w[size_t(t)] / double(st) - double(pt);
    }
    l[h] = float(double(l[h]) + moved);
    float* dst = acc + size_t(h) * acc_stride;
    for (size_t i = 0; i < d; ++i) {
      const size_t e = Fp8Bf16Element(i);
      double sum = double(dst[i]) * double(alpha[h]);
      for (int t = 0; t < n; ++t) sum += w[size_t(t)] * Value<kE4M3>(rows[t].v_data, e);
      dst[i] = float(sum);
    }
  }
}

}  // namespace bf16_ref
}  // namespace

void Fp8Bf16QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  for (size_t i = 0; i < d; ++i) q16[i] = int16_t(Bf16(q[Fp8Bf16KElement(i)]));
  *scale = 1.0f;
}

bool Fp8Bf16Applies(const KvLayerView& kv) {
  const bool fp8 = kv.k_dtype == KvDtype::kFp8E4M3 || kv.k_dtype == KvDtype::kFp8E5M2;
  return fp8 && kv.v_dtype == kv.k_dtype && kv.k_scale_bytes == 2 && kv.v_scale_bytes == 2 &&
         kv.head_dim_k % 64 == 0 && kv.head_dim_v % 64 == 0 && kv.head_dim_k <= 512 &&
         kv.head_dim_v <= 512;
}

const LowPrecisionSteps& Fp8Bf16StepsScalar(KvDtype dtype) {
  static const LowPrecisionSteps e4m3{"scalar", &Fp8Bf16QuantizeQuery, &bf16_ref::Scores<true>,
                                      &bf16_ref::Accumulate<true>, &Fp8Bf16Element};
  static const LowPrecisionSteps e5m2{"scalar", &Fp8Bf16QuantizeQuery, &bf16_ref::Scores<false>,
                                      &bf16_ref::Accumulate<false>, &Fp8Bf16Element};
  return dtype == KvDtype::kFp8E4M3 ? e4m3 : e5m2;
}

}  // namespace kvengine
