// Internal: helpers that the raw AVX-512 steps (attention_vnni.cc, attention_bf16.cc) share. Each
// of those files compiles its functions with its own target attribute, a superset of
// KV_AVX512_STEPS_TARGET, so these inline into them.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/attention/attention_kernel.h"
#include "quant/codec_params.h"

#define KV_AVX512_STEPS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))

namespace kvengine::avx512_steps {

KV_AVX512_STEPS_TARGET inline float LoadF16Scale(const uint8_t* p) {
  return _cvtsh_ss(quant_internal::LoadU16(p));
}

// out[t] = the f16 scale at rows[t].*kField as float, t < n. Sixteen rows with no run start after
// the first (ItemRowWalker::Next) are consecutive rows of one block, whose scales are adjacent
// (2 bytes each, as the steps' Applies require): one vector load and conversion instead of
// sixteen.
template <const uint8_t* KvRowRefs::*kField>
KV_AVX512_STEPS_TARGET inline void LoadRowScales(const KvRowRefs* rows, int n, uint64_t run_starts,
                                                 float* out) {
  int t = 0;
  for (; t + 16 <= n; t += 16) {
    if (((run_starts >> (t + 1)) & 0x7fff) == 0) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[t].*kField));
      _mm512_storeu_ps(out + t, _mm512_cvtph_ps(h));
    } else {
      for (int i = t; i < t + 16; ++i) out[i] = LoadF16Scale(rows[i].*kField);
    }
  }
  for (; t < n; ++t) out[t] = LoadF16Scale(rows[t].*kField);
}

// v[0, 16) -> one vector whose lane i is the sum of v[i]'s 32-bit lanes, added by add(a, b)
// (int32 or float; the order of additions is fixed). v is clobbered. add's operator() must carry
// this target (or a narrower one) to be inlined.
template <class Add>
KV_AVX512_STEPS_TARGET __attribute__((always_inline)) inline __m512i TransposeSum16(__m512i* v,
                                                                                    Add add) {
  for (int k = 0; k < 8; ++k) {
    const __m512i a = v[2 * k], b = v[2 * k + 1];
    v[k] = add(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  }
  for (int k = 0; k < 4; ++k) {
    const __m512i a = v[2 * k], b = v[2 * k + 1];
    v[k] = add(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
  }
  for (int k = 0; k < 2; ++k) {
    const __m512i a = v[2 * k], b = v[2 * k + 1];
    v[k] = add(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
               _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  return add(_mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
             _mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace kvengine::avx512_steps
