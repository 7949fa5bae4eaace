// The int16 steps for AVX2 (attention_int16.h): vpmaddwd multiplies 16 int16 pairs and sums
// each pair into one of 8 int32 lanes, and vpaddd adds that to an accumulator. Raw intrinsics
// with their own target attribute, so the AVX2 and AVX3 Highway targets can both call them; they
// run only where Int8StepsAvx2() returned them.
//
// Scores: micro-tiles of 2 positions x up to 4 heads = 8 int32 accumulators (AVX2's 16
// registers also hold both rows' codes and a q slice); per 16 elements of head_dim each K row's
// codes are sign-extended to int16 once (vpmovsxbw) and multiplied pairwise with each head's q16
// slice. The 8 accumulators are reduced by a transposed tree (exact: int32), and two tiles'
// sums are stored together, four positions per head.
// Values: passes of 16 elements (2 x 8 int32 lanes per head: 8 accumulators for 4 heads); per
// pair of positions the slice of both rows is sign-extended and interleaved into int16 pairs
// (v_t[e], v_t+1[e]) and multiplied with each head's broadcast weight pair (W_t, W_t+1); after the
// chunk the int32 sums go to float, times S, into the accumulators (Int8Int16Element order, the
// same as the VNNI steps').
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention/attention_int16.h"
#include "base/cpu_features.h"
#include "quant/codec_params.h"

#define KV_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace int16_avx2 {

constexpr int kChunk = kAttentionChunk;
constexpr int kScorePos = 2;           // Positions per score micro-tile.
constexpr float kInt16Max = 32767.0f;  // Largest |code| of q16 and of the V weights.
static_assert(int64_t(kChunk) * 127 * 32767 < (int64_t(1) << 31));
static_assert(kChunk % 8 == 0 && kAttentionPosTile % kScorePos == 0);

KV_AVX2_TARGET inline float LoadF16Scale(const uint8_t* p) {
  return _cvtsh_ss(quant_internal::LoadU16(p));
}

// out[t] = the f16 scale at rows[t].*kField as float, t < n. Eight rows with no run start after
// the first (ItemRowWalker::Next) are consecutive rows of one block, whose scales are adjacent
// (2 bytes each, Int8Int16Applies): one vector load and conversion instead of eight.
template <const uint8_t* KvRowRefs::*kField>
KV_AVX2_TARGET inline void LoadRowScales(const KvRowRefs* rows, int n, uint64_t run_starts,
                                         float* out) {
  int t = 0;
  for (; t + 8 <= n; t += 8) {
    if (((run_starts >> (t + 1)) & 0x7f) == 0) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t].*kField));
      _mm256_storeu_ps(out + t, _mm256_cvtph_ps(h));
    } else {
      for (int i = t; i < t + 8; ++i) out[i] = LoadF16Scale(rows[i].*kField);
    }
  }
  for (; t < n; ++t) out[t] = LoadF16Scale(rows[t].*kField);
}

// Lanes whose index is below `valid` (0 .. 8) set, for masked loads.
KV_AVX2_TARGET inline __m256i FirstLanes(int valid) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

KV_AVX2_TARGET inline float MaxOfLanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Rounds 16 floats to int32 (to nearest, ties even) and stores them saturated to int16.
KV_AVX2_TARGET inline void StoreRoundedInt16(__m256 a, __m256 b, int16_t* out) {
  const __m256i packed = _mm256_packs_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b));
  // packs works within 128-bit lanes: [a0-3 b0-3 | a4-7 b4-7] -> [a0-7 b0-7].
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permute4x64_epi64(packed, _MM_SHUFFLE(3, 1, 2, 0)));
}

// acc += the pairwise products of a and b (vpmaddwd + vpaddd). GCC 12 compiles the add of the
// intrinsics on an accumulator array into a new register per step, then copies all of them
// back, and with 8 accumulators spilled one to the stack: a store and a load in that chain every
// step (half of the value step's samples). The asm add keeps each accumulator in one register.
KV_AVX2_TARGET __attribute__((always_inline)) inline void MaddAcc(__m256i& acc, __m256i a,
                                                                  __m256i b) {
  const __m256i products = _mm256_madd_epi16(a, b);
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpaddd %1, %0, %0" : "+x"(acc) : "x"(products));
#else
  acc = _mm256_add_epi32(acc, products);
#endif
}

// v[0, 8) -> one vector whose lane i is the sum of v[i]'s lanes (v clobbered). Integer adds:
// exact, so the tree's order does not matter.
KV_AVX2_TARGET inline __m256i TransposeSum8(__m256i* v) {
  for (int k = 0; k < 4; ++k) {
    const __m256i a = v[2 * k], b = v[2 * k + 1];
    v[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
  }
  for (int k = 0; k < 2; ++k) {
    const __m256i a = v[2 * k], b = v[2 * k + 1];
    v[k] = _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
  }
  return _mm256_add_epi32(_mm256_permute2x128_si256(v[0], v[1], 0x20),
                          _mm256_permute2x128_si256(v[0], v[1], 0x31));
}

KV_AVX2_TARGET void QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  // d is a multiple of 32 (Int8Int16Applies).
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax_v = _mm256_setzero_ps();
  for (size_t i = 0; i < d; i += 8) {
    amax_v = _mm256_max_ps(amax_v, _mm256_and_ps(_mm256_loadu_ps(q + i), abs_mask));
  }
  const float amax = MaxOfLanes(amax_v);
  const __m256 inv = _mm256_set1_ps(amax > 0.0f && std::isfinite(amax) ? kInt16Max / amax : 0.0f);
  for (size_t i = 0; i < d; i += 16) {
    StoreRoundedInt16(_mm256_mul_ps(_mm256_loadu_ps(q + i), inv),
                      _mm256_mul_ps(_mm256_loadu_ps(q + i + 8), inv), q16 + i);
  }
  *scale = amax / kInt16Max;
}

// The exact sums of one micro-tile: lane 2h + i is head h's sum for row r_i (i = 0, 1).
template <int kHeads>
KV_AVX2_TARGET inline __m256i TileSums(const int8_t* r0, const int8_t* r1, const int16_t* q16,
                                       size_t d) {
  __m256i acc[8];  // [head][position]; heads past kHeads stay zero.
  for (__m256i& a : acc) a = _mm256_setzero_si256();
  for (size_t j = 0; j < d; j += 16) {
    const __m256i k0 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + j)));
    const __m256i k1 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + j)));
    for (int h = 0; h < kHeads; ++h) {
      __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q16 + size_t(h) * d + j));
      // One load for both positions: without this GCC folds the load into each vpmaddwd, and
      // the loop's 10 vector loads, not its 8 multiplies, would bound it.
      asm("" : "+x"(qv));
      MaddAcc(acc[2 * h], k0, qv);
      MaddAcc(acc[2 * h + 1], k1, qv);
    }
  }
  return TransposeSum8(acc);
}

template <int kHeads>
KV_AVX2_TARGET void ScoresT(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                            const float* q_scale, size_t d, float* scores, const KvPrefetch& pf) {
  // Exact q16 . k_code sums, written a whole kAttentionPosTile of positions at a time (rows past
  // n are the repeated last row's; their scores are unspecified).
  alignas(32) int32_t isum[kHeads][kChunk];
  alignas(32) float ks[kChunk];  // K row scales, t < n.
  static_assert(kAttentionPosTile == 2 * kScorePos);
  const int tiles = (n + kAttentionPosTile - 1) / kAttentionPosTile;
  const int pf_per_tile = (pf.n + tiles - 1) / tiles;  // All of pf's rows by the last tile.
  int pf_next = 0;
  for (int t0 = 0; t0 < n; t0 += kAttentionPosTile) {
    for (int i = 0; i < pf_per_tile; ++i) PrefetchKvRow(pf, pf_next++);
    const auto row = [&](int i) { return reinterpret_cast<const int8_t*>(rows[t0 + i].k_data); };
    const __m256i a = TileSums<kHeads>(row(0), row(1), q16, d);  // Positions t0, t0 + 1.
    const __m256i b = TileSums<kHeads>(row(2), row(3), q16, d);  // t0 + 2, t0 + 3.
    // [h0: t0-3 | h2: t0-3] and [h1: t0-3 | h3: t0-3].
    const __m256i even = _mm256_unpacklo_epi64(a, b), odd = _mm256_unpackhi_epi64(a, b);
    const auto store = [&](int h, __m128i v) {
      _mm_store_si128(reinterpret_cast<__m128i*>(&isum[h][t0]), v);
    };
    store(0, _mm256_castsi256_si128(even));
    if constexpr (kHeads > 1) store(1, _mm256_castsi256_si128(odd));
    if constexpr (kHeads > 2) store(2, _mm256_extracti128_si256(even, 1));
    if constexpr (kHeads > 3) store(3, _mm256_extracti128_si256(odd, 1));
  }
  LoadRowScales<&KvRowRefs::k_scale>(rows, n, run_starts, ks);
  for (int h = 0; h < kHeads; ++h) {
    const __m256 qs = _mm256_set1_ps(q_scale[h]);
    for (int t = 0; t < n; t += 8) {
      // Past n: isum may be past the last tile and ks unwritten, so both are masked to 0.
      const __m256i valid = FirstLanes(n - t);
      const __m256 s = _mm256_cvtepi32_ps(_mm256_maskload_epi32(&isum[h][t], valid));
      _mm256_storeu_ps(scores + h * kChunk + t,
                       _mm256_mul_ps(_mm256_mul_ps(s, qs), _mm256_maskload_ps(ks + t, valid)));
    }
  }
}

// One pass of 16 elements at j (a multiple of 16) over the chunk's row pairs: 2 int32
// accumulators per head.
template <int kHeads>
KV_AVX2_TARGET inline void AccumulatePass(const int8_t* const* a_rows, const int8_t* const* b_rows,
                                          int pairs, const int16_t (*w16)[kChunk],
                                          const float* s, const float* alpha, size_t j, float* acc,
                                          size_t acc_stride) {
  __m256i ia[kHeads][2];
  for (int h = 0; h < kHeads; ++h) ia[h][0] = ia[h][1] = _mm256_setzero_si256();
  for (int t = 0; t < pairs; ++t) {
    const __m256i va =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a_rows[t] + j)));
    const __m256i vb =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b_rows[t] + j)));
    const __m256i lo = _mm256_unpacklo_epi16(va, vb);  // (a, b) pairs of elements {0-3, 8-11}.
    const __m256i hi = _mm256_unpackhi_epi16(va, vb);  // ... of elements {4-7, 12-15}.
    for (int h = 0; h < kHeads; ++h) {
      const __m256i w = _mm256_set1_epi32(WeightPair(w16[h], t));
      MaddAcc(ia[h][0], lo, w);
      MaddAcc(ia[h][1], hi, w);
    }
  }
  // Int8Int16Element order: in the run of 32 at j / 32 * 32, the low pairs of its first 16
  // elements at [0, 8), of its second 16 at [8, 16), the high pairs at [16, 24) and [24, 32).
  const size_t base = j / 32 * 32, half = (j % 32) / 16;
  for (int h = 0; h < kHeads; ++h) {
    const __m256 al = _mm256_set1_ps(alpha[h]), sv = _mm256_set1_ps(s[h]);
    float* dst[2] = {acc + size_t(h) * acc_stride + base + 8 * half,
                     acc + size_t(h) * acc_stride + base + 16 + 8 * half};
    for (int k = 0; k < 2; ++k) {
      const __m256 prev = _mm256_mul_ps(_mm256_loadu_ps(dst[k]), al);
      _mm256_storeu_ps(dst[k], _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[h][k]), sv, prev));
    }
  }
}

template <int kHeads>
KV_AVX2_TARGET void AccumulateT(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                                const float* alpha, size_t d, float* acc, size_t acc_stride) {
  alignas(32) float vs[kChunk];  // V row scales, t < n.
  LoadRowScales<&KvRowRefs::v_scale>(rows, n, run_starts, vs);
  // Weights W_t as int16; AccumulatePass reads pairs (W_2i, W_2i+1) as one int32 (WeightPair).
  alignas(32) int16_t w16[kHeads][kChunk];
  float s[kHeads];
  constexpr int kVecs = kChunk / 8;
  for (int h = 0; h < kHeads; ++h) {
    __m256 w[kVecs];
    __m256 wmax_v = _mm256_setzero_ps();
    for (int k = 0; k < kVecs; ++k) {
      // Weights past n are 0: p and vs there are not ours to read (the softmax writes whole
      // vectors only; vs is written up to n).
      const __m256i mask = FirstLanes(std::clamp(n - 8 * k, 0, 8));
      w[k] = _mm256_mul_ps(_mm256_maskload_ps(p + h * kChunk + 8 * k, mask),
                           _mm256_maskload_ps(vs + 8 * k, mask));
      wmax_v = _mm256_max_ps(wmax_v, w[k]);
    }
    const float wmax = MaxOfLanes(wmax_v);  // Weights are >= 0.
    s[h] = wmax / kInt16Max;
    const __m256 inv = _mm256_set1_ps(wmax > 0.0f ? kInt16Max / wmax : 0.0f);
    for (int k = 0; k < kVecs; k += 2) {
      StoreRoundedInt16(_mm256_mul_ps(w[k], inv), _mm256_mul_ps(w[k + 1], inv), w16[h] + 8 * k);
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
  for (size_t j = 0; j < d; j += 16) {
    AccumulatePass<kHeads>(a_rows, b_rows, pairs, w16, s, alpha, j, acc, acc_stride);
  }
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

bool CpuRunsAvx2Steps() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CpuHasF16cBit();
}

}  // namespace int16_avx2
}  // namespace

const LowPrecisionSteps* Int8StepsAvx2() {
  static const LowPrecisionSteps steps{"avx2", &int16_avx2::QuantizeQuery, &int16_avx2::Scores,
                                       &int16_avx2::Accumulate, &Int8Int16Element};
  static const bool runs = int16_avx2::CpuRunsAvx2Steps();
  return runs ? &steps : nullptr;
}

}  // namespace kvengine
