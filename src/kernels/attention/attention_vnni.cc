// The int16 steps for AVX-512 VNNI (attention_int16.h), raw AVX-512 intrinsics: Highway 1.0.3
// does not build its AVX3_DL target here, so these functions carry their own target attribute
// and run only where Int8StepsAvx512Vnni() returned them.
//
// Scores: micro-tiles of 4 positions x up to 4 heads = 16 int32 accumulators; per 32 elements of
// head_dim each K row's codes are sign-extended to int16 once (vpmovsxbw) and vpdpwssd'ed with
// each head's q16 slice. The 16 accumulators are reduced by a transposed tree (exact: int32).
// Values: passes of 64 elements (4 x 16 int32 lanes per head, 16 accumulators for 4 heads); per
// pair of positions each 32-element slice of both rows is sign-extended and interleaved into
// int16 pairs (v_t[e], v_t+1[e]) and vpdpwssd'ed with each head's broadcast weight pair
// (W_t, W_t+1); after the chunk the int32 sums go to float, times S, into the accumulators.
#include "kernels/attention/attention_int16.h"

// GCC 12 reports its own _mm512_undefined_* placeholders inside the AVX-512 intrinsics as
// uninitialized (GCC bug 105593); nothing here reads an uninitialized value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention/attention_avx512_steps.h"
#include "base/cpu_features.h"
#include "quant/codec_params.h"

#define KV_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace int16_vnni {

constexpr int kChunk = kAttentionChunk;
constexpr int kPosTile = kAttentionPosTile;  // Positions per score micro-tile.
constexpr float kInt16Max = 32767.0f;        // Largest |code| of q16 and of the V weights.
// A chunk's int32 V sums stay below 2^31: kChunk * 127 * 32767 (scores: dk <= 512, see .h).
static_assert(int64_t(kChunk) * 127 * 32767 < (int64_t(1) << 31));
static_assert(kChunk % 16 == 0);

using avx512_steps::LoadRowScales;

// acc += pairwise a * b (vpdpwssd). GCC 12 compiles the intrinsic on an accumulator array into
// a register copy per instruction plus spills (it does not tie the accumulator operand across the
// loop); the asm form with a "+v" operand keeps each accumulator in one register.
KV_VNNI_TARGET __attribute__((always_inline)) inline void DpWssd(__m512i& acc, __m512i a,
                                                                 __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
#else
  acc = _mm512_dpwssd_epi32(acc, a, b);
#endif
}

// v[0, 16) -> one vector whose lane i is the sum of v[i]'s lanes (v clobbered). Integer adds:
// exact, so the tree's order does not matter.
struct AddInt32 {  // TransposeSum16's target (see AddFloat in attention_bf16.cc).
  KV_AVX512_STEPS_TARGET __attribute__((always_inline)) __m512i operator()(__m512i a,
                                                                           __m512i b) const {
    return _mm512_add_epi32(a, b);
  }
};
KV_VNNI_TARGET inline __m512i TransposeSum16(__m512i* v) {
  return avx512_steps::TransposeSum16(v, AddInt32{});
}

template <int kHeads>
KV_VNNI_TARGET void ScoresT(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                            const float* q_scale, size_t d, float* scores, const KvPrefetch& pf) {
  alignas(64) int32_t isum[kHeads][kChunk];  // Exact q16 . k_code sums (whole tiles written).
  alignas(64) float ks[kChunk] = {};         // K row scales; 0 past n.
  const int tiles = (n + kPosTile - 1) / kPosTile;
  const int pf_per_tile = (pf.n + tiles - 1) / tiles;  // All of pf's rows by the last tile.
  int pf_next = 0;
  for (int t0 = 0; t0 < n; t0 += kPosTile) {
    for (int i = 0; i < pf_per_tile; ++i) PrefetchKvRow(pf, pf_next++);
    const int8_t* r[kPosTile];
    for (int i = 0; i < kPosTile; ++i) {  // Padded past n (masked below).
      r[i] = reinterpret_cast<const int8_t*>(rows[t0 + i].k_data);
    }
    __m512i acc[16];  // [head][position]; heads past kHeads stay zero.
    for (__m512i& a : acc) a = _mm512_setzero_si512();
    for (size_t j = 0; j < d; j += 32) {
      __m512i k[kPosTile];
      for (int i = 0; i < kPosTile; ++i) {
        k[i] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[i] + j)));
      }
      for (int h = 0; h < kHeads; ++h) {
        const __m512i qv = _mm512_loadu_si512(q16 + size_t(h) * d + j);
        for (int i = 0; i < kPosTile; ++i) {
          DpWssd(acc[h * kPosTile + i], k[i], qv);
        }
      }
    }
    // Lanes [4h, 4h + 4) are head h's sums for positions t0 .. t0 + 3 (those past n are the
    // repeated row's: finite, and their K scale is 0).
    const __m512i sums = TransposeSum16(acc);
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, sums);
    for (int h = 0; h < kHeads; ++h) std::memcpy(&isum[h][t0], lanes + 4 * h, 4 * sizeof(int32_t));
  }
  LoadRowScales<&KvRowRefs::k_scale>(rows, n, run_starts, ks);
  for (int h = 0; h < kHeads; ++h) {
    const __m512 qs = _mm512_set1_ps(q_scale[h]);
    for (int t = 0; t < n; t += 16) {
      const __mmask16 tail = __mmask16((1u << std::min(16, n - t)) - 1);  // isum ends at the tile.
      const __m512 s = _mm512_cvtepi32_ps(_mm512_maskz_load_epi32(tail, &isum[h][t]));
      _mm512_storeu_ps(scores + h * kChunk + t,
                       _mm512_mul_ps(_mm512_mul_ps(s, qs), _mm512_load_ps(ks + t)));
    }
  }
}

// Passes of kSlices32 x 32 elements (1 or 2): 2 * kSlices32 int32 accumulators per head.
template <int kHeads, int kSlices32>
KV_VNNI_TARGET inline void AccumulatePass(const int8_t* const* a_rows, const int8_t* const* b_rows,
                                          int pairs, const int16_t (*w16)[kChunk], const float* s,
                                          const float* alpha, size_t j, float* acc,
                                          size_t acc_stride) {
  __m512i ia[kHeads][2 * kSlices32];
  for (int h = 0; h < kHeads; ++h) {
    for (int k = 0; k < 2 * kSlices32; ++k) ia[h][k] = _mm512_setzero_si512();
  }
  for (int t = 0; t < pairs; ++t) {
    __m512i lo[kSlices32], hi[kSlices32];
    for (int k = 0; k < kSlices32; ++k) {
      const __m512i va = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_rows[t] + j + 32 * size_t(k))));
      const __m512i vb = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_rows[t] + j + 32 * size_t(k))));
      lo[k] = _mm512_unpacklo_epi16(va, vb);  // (a, b) pairs of elements 0-3 of each 8.
      hi[k] = _mm512_unpackhi_epi16(va, vb);  // ... of elements 4-7.
    }
    for (int h = 0; h < kHeads; ++h) {
      const __m512i w = _mm512_set1_epi32(WeightPair(w16[h], t));
      for (int k = 0; k < kSlices32; ++k) {
        DpWssd(ia[h][2 * k], lo[k], w);
        DpWssd(ia[h][2 * k + 1], hi[k], w);
      }
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    const __m512 al = _mm512_set1_ps(alpha[h]), sv = _mm512_set1_ps(s[h]);
    float* dst = acc + size_t(h) * acc_stride + j;
    for (int k = 0; k < 2 * kSlices32; ++k) {
      const __m512 prev = _mm512_mul_ps(_mm512_loadu_ps(dst + 16 * k), al);
      _mm512_storeu_ps(dst + 16 * k, _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[h][k]), sv, prev));
    }
  }
}

template <int kHeads>
KV_VNNI_TARGET void AccumulateT(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                                const float* alpha, size_t d, float* acc, size_t acc_stride) {
  alignas(64) float vs[kChunk] = {};  // V row scales; 0 past n (so are the weights).
  LoadRowScales<&KvRowRefs::v_scale>(rows, n, run_starts, vs);
  // Weights W_t as int16; AccumulatePass reads pairs (W_2i, W_2i+1) as one int32 (WeightPair).
  alignas(64) int16_t w16[kHeads][kChunk];
  float s[kHeads];
  constexpr int kVecs = kChunk / 16;
  for (int h = 0; h < kHeads; ++h) {
    // p past n is not ours to read (the softmax writes whole vectors only): masked loads.
    __m512 w[kVecs];
    __m512 wmax_v = _mm512_setzero_ps();
    for (int k = 0; k < kVecs; ++k) {
      const int valid = std::clamp(n - 16 * k, 0, 16);
      const __mmask16 mask = __mmask16((1u << valid) - 1);
      w[k] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, p + h * kChunk + 16 * k),
                           _mm512_load_ps(vs + 16 * k));
      wmax_v = _mm512_max_ps(wmax_v, w[k]);
    }
    const float wmax = _mm512_reduce_max_ps(wmax_v);  // Weights are >= 0.
    s[h] = wmax / kInt16Max;
    const __m512 inv = _mm512_set1_ps(wmax > 0.0f ? kInt16Max / wmax : 0.0f);
    // Round to nearest; |W| <= 32767 (w * inv <= 32767 up to rounding, and cvt saturates).
    for (int k = 0; k < kVecs; ++k) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(w16[h] + 16 * k),
                         _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(w[k], inv))));
    }
  }
  // Row pairs (2i, 2i+1); an odd n pairs its last row with itself (weight 0).
  const int pairs = (n + 1) / 2;
  const int8_t* a_rows[kChunk / 2];
  const int8_t* b_rows[kChunk / 2];
  for (int t = 0; t < pairs; ++t) {
    a_rows[t] = reinterpret_cast<const int8_t*>(rows[2 * t].v_data);
    b_rows[t] = reinterpret_cast<const int8_t*>(rows[std::min(2 * t + 1, n - 1)].v_data);
  }
  size_t j = 0;
  for (; j + 64 <= d; j += 64) {
    AccumulatePass<kHeads, 2>(a_rows, b_rows, pairs, w16, s, alpha, j, acc, acc_stride);
  }
  if (j < d) AccumulatePass<kHeads, 1>(a_rows, b_rows, pairs, w16, s, alpha, j, acc, acc_stride);
}

KV_VNNI_TARGET void QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  // d is a multiple of 32 (Int8Int16Applies).
  __m512 amax_v = _mm512_setzero_ps();
  for (size_t i = 0; i < d; i += 16) {
    amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(_mm512_loadu_ps(q + i)));
  }
  const float amax = _mm512_reduce_max_ps(amax_v);
  const __m512 inv = _mm512_set1_ps(amax > 0.0f && std::isfinite(amax) ? kInt16Max / amax : 0.0f);
  for (size_t i = 0; i < d; i += 16) {
    // Round to nearest even; |q * inv| <= 32767 (saturating narrowing for rounding slack).
    const __m512i c = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(q + i), inv));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q16 + i), _mm512_cvtsepi32_epi16(c));
  }
  *scale = amax / kInt16Max;
}

void Scores(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
            const float* q_scale, int heads, size_t d, float* scores, const KvPrefetch& pf) {
  ForHeads(heads, [&]<int kHeads>() {
    ScoresT<kHeads>(rows, n, run_starts, q16, q_scale, d, scores, pf);
  });
}

void Accumulate(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride,
                float* /*l*/) {  // l: the int16 weights' rounding is not folded into it.
  ForHeads(heads, [&]<int kHeads>() {
    AccumulateT<kHeads>(rows, n, run_starts, p, alpha, d, acc, acc_stride);
  });
}

bool CpuRunsVnniSteps() {
  __builtin_cpu_init();
  return CpuHasAvx512VnniBit() && CpuHasF16cBit() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("fma");
}

}  // namespace int16_vnni
}  // namespace

const LowPrecisionSteps* Int8StepsAvx512Vnni() {
  static const LowPrecisionSteps steps{"vnni", &int16_vnni::QuantizeQuery, &int16_vnni::Scores,
                                       &int16_vnni::Accumulate, &Int8Int16Element};
  static const bool runs = int16_vnni::CpuRunsVnniSteps();
  return runs ? &steps : nullptr;
}

}  // namespace kvengine
