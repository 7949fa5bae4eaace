// The bf16 steps for fp8 KV on AVX-512 BF16 (attention_bf16.h), raw AVX-512 intrinsics with their
// own target attribute (Highway 1.0.3's AVX3 target has neither BF16 nor VBMI); they run only
// where Fp8StepsAvx512Bf16() returned them.
//
// Decoding: 64 codes c in one vector; hi = vpermi2b(c, table) | (c & 0x80) and lo = vpermi2b(c,
// table) are the bf16 bits' two bytes (the tables' 128 entries are indexed by c's low 7 bits), and
// vpunpck{l,h}bw(lo, hi) make them two vectors of 32 bf16s (within 128-bit lanes).
// Scores: micro-tiles of 4 positions x up to 4 heads = 16 f32 accumulators; per 64 elements of
// head_dim each K row is decoded once and vdpbf16ps'ed with each head's two q vectors (q already in
// the decoded order, Fp8Bf16KElement). The accumulators are reduced by a transposed tree.
// Values: passes of 64 elements (4 x 16 f32 lanes per head, 16 accumulators for 4 heads); per pair
// of positions the two rows' codes are interleaved byte by byte first, so that decoding gives
// bf16 pairs (v_t[e], v_t+1[e]) for vdpbf16ps with each head's broadcast weight pair (w_t,
// w_t+1); the weights' rounding is added to the softmax's sum l (attention_bf16.h).
#include "kernels/attention/attention_bf16.h"

// GCC 12 reports its own _mm512_undefined_* placeholders inside the AVX-512 intrinsics as
// uninitialized (GCC bug 105593); nothing here reads an uninitialized value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/attention/attention_avx512_steps.h"
#include "base/cpu_features.h"
#include "quant/codec_params.h"
#include "quant/half.h"

#define KV_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vbmi,f16c,fma")))

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace bf16_avx512 {

constexpr int kChunk = kAttentionChunk;
constexpr int kPosTile = kAttentionPosTile;  // Positions per score micro-tile.
static_assert(kPosTile == 4 && kChunk % 32 == 0);
constexpr size_t kMaxDim = 512;  // Fp8Bf16Applies.

// [format][byte][code & 0x7F]: byte 1 (high) and 0 (low) of the bf16 bits of the code's value
// (its sign bit clear); the value is exact in bf16 (attention_bf16.h).
struct Tables {
  alignas(64) uint8_t bytes[2][2][128];
  Tables() {
    for (int f = 0; f < 2; ++f) {
      for (int c = 0; c < 128; ++c) {
        const float v = f == 0 ? Fp8E4M3ToF32(uint8_t(c)) : Fp8E5M2ToF32(uint8_t(c));
        const uint16_t b = Bf16(v);
        bytes[f][1][c] = uint8_t(b >> 8);
        bytes[f][0][c] = uint8_t(b & 0xFF);
      }
    }
  }
};

const Tables& TheTables() {
  static const Tables t;
  return t;
}

// The four table vectors of one format, in registers for a whole step.
struct Decoder {
  __m512i hi0, hi1, lo0, lo1;
  KV_BF16_TARGET explicit Decoder(bool e4m3) {
    const auto& b = TheTables().bytes[e4m3 ? 0 : 1];
    hi0 = _mm512_load_si512(b[1]);
    hi1 = _mm512_load_si512(b[1] + 64);
    lo0 = _mm512_load_si512(b[0]);
    lo1 = _mm512_load_si512(b[0] + 64);
  }
  // c's 64 codes -> bf16s: *w0 holds, per 128-bit lane L, codes 16L .. 16L + 7; *w1 16L + 8 ..
  // 16L + 15.
  KV_BF16_TARGET __attribute__((always_inline)) inline void Decode(__m512i c, __m512i* w0,
                                                                   __m512i* w1) const {
    // hi | (c & 0x80): ternary-logic truth table A | (B & C) = 0xF8.
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, c, hi1), c,
                                                 _mm512_set1_epi8(char(0x80)), 0xF8);
    const __m512i lo = _mm512_permutex2var_epi8(lo0, c, lo1);
    *w0 = _mm512_unpacklo_epi8(lo, hi);
    *w1 = _mm512_unpackhi_epi8(lo, hi);
  }
};

using avx512_steps::LoadRowScales;

// acc += pairwise a * b in f32 (vdpbf16ps). As DpWssd in attention_vnni.cc: the asm form keeps
// GCC 12 from copying each accumulator around every instruction.
KV_BF16_TARGET __attribute__((always_inline)) inline void DpBf16(__m512& acc, __m512i a,
                                                                 __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
#else
  acc = _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
#endif
}

// (The adds carry TransposeSum16's own target, not this file's wider one: a callee can be
// inlined only into a caller with at least its features.)
struct AddFloat {
  KV_AVX512_STEPS_TARGET __attribute__((always_inline)) __m512i operator()(__m512i a,
                                                                           __m512i b) const {
    return _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  }
};
// v[0, 16) -> one vector whose lane i is the sum of v[i]'s lanes (v clobbered).
KV_BF16_TARGET inline __m512 TransposeSum16(__m512* v) {
  __m512i bits[16];
  for (int i = 0; i < 16; ++i) bits[i] = _mm512_castps_si512(v[i]);
  return _mm512_castsi512_ps(avx512_steps::TransposeSum16(bits, AddFloat{}));
}

template <bool kE4M3, int kHeads>
KV_BF16_TARGET void ScoresT(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                            size_t d, float* scores, const KvPrefetch& pf) {
  const Decoder dec(kE4M3);
  alignas(64) float sum[kHeads][kChunk];  // q_b . k_t (whole tiles written).
  alignas(64) float ks[kChunk] = {};      // K row scales; 0 past n.
  const int tiles = (n + kPosTile - 1) / kPosTile;
  const int pf_per_tile = (pf.n + tiles - 1) / tiles;  // All of pf's rows by the last tile.
  int pf_next = 0;
  for (int t0 = 0; t0 < n; t0 += kPosTile) {
    for (int i = 0; i < pf_per_tile; ++i) PrefetchKvRow(pf, pf_next++);
    const uint8_t* r[kPosTile];
    for (int i = 0; i < kPosTile; ++i) r[i] = rows[t0 + i].k_data;  // Padded past n.
    __m512 acc[16];  // [head][position]; heads past kHeads stay zero.
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (size_t j = 0; j < d; j += 64) {
      __m512i k0[kPosTile], k1[kPosTile];
      for (int i = 0; i < kPosTile; ++i) dec.Decode(_mm512_loadu_si512(r[i] + j), &k0[i], &k1[i]);
      for (int h = 0; h < kHeads; ++h) {
        const __m512i q0 = _mm512_loadu_si512(q16 + size_t(h) * d + j);
        const __m512i q1 = _mm512_loadu_si512(q16 + size_t(h) * d + j + 32);
        for (int i = 0; i < kPosTile; ++i) {
          DpBf16(acc[h * kPosTile + i], k0[i], q0);
          DpBf16(acc[h * kPosTile + i], k1[i], q1);
        }
      }
    }
    // Lanes [4h, 4h + 4) are head h's sums for positions t0 .. t0 + 3 (those past n are the
    // repeated row's; the softmax masks them).
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, TransposeSum16(acc));
    for (int h = 0; h < kHeads; ++h) std::memcpy(&sum[h][t0], lanes + 4 * h, 4 * sizeof(float));
  }
  LoadRowScales<&KvRowRefs::k_scale>(rows, n, run_starts, ks);
  for (int h = 0; h < kHeads; ++h) {
    for (int t = 0; t < n; t += 16) {
      const __mmask16 tail = __mmask16((1u << std::min(16, n - t)) - 1);  // sum ends at the tile.
      const __m512 s = _mm512_maskz_load_ps(tail, &sum[h][t]);
      _mm512_storeu_ps(scores + h * kChunk + t, _mm512_mul_ps(s, _mm512_load_ps(ks + t)));
    }
  }
}

// One pass over the chunk's row pairs for elements [j, j + 64) of up to 4 heads.
template <bool kE4M3, int kHeads>
KV_BF16_TARGET inline void AccumulatePass(const Decoder& dec, const uint8_t* const* a_rows,
                                          const uint8_t* const* b_rows, int pairs,
                                          const uint32_t (*wpair)[kChunk / 2], const float* alpha,
                                          size_t j, float* acc, size_t acc_stride) {
  __m512 fa[kHeads][4];
  for (int h = 0; h < kHeads; ++h) {
    for (int k = 0; k < 4; ++k) fa[h][k] = _mm512_setzero_ps();
  }
  for (int t = 0; t < pairs; ++t) {
    const __m512i a = _mm512_loadu_si512(a_rows[t] + j);
    const __m512i b = _mm512_loadu_si512(b_rows[t] + j);
    __m512i v[4];  // Fp8Bf16Element's vectors 0-3: bf16 pairs (v_t[e], v_t+1[e]).
    dec.Decode(_mm512_unpacklo_epi8(a, b), &v[0], &v[1]);
    dec.Decode(_mm512_unpackhi_epi8(a, b), &v[2], &v[3]);
    for (int h = 0; h < kHeads; ++h) {
      const __m512i w = _mm512_set1_epi32(int(wpair[h][t]));
      for (int k = 0; k < 4; ++k) DpBf16(fa[h][k], v[k], w);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    const __m512 al = _mm512_set1_ps(alpha[h]);
    float* dst = acc + size_t(h) * acc_stride + j;
    for (int k = 0; k < 4; ++k) {
      _mm512_storeu_ps(dst + 16 * k, _mm512_fmadd_ps(_mm512_loadu_ps(dst + 16 * k), al, fa[h][k]));
    }
  }
}

template <bool kE4M3, int kHeads>
KV_BF16_TARGET void AccumulateT(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                                const float* alpha, size_t d, float* acc, size_t acc_stride,
                                float* l) {
  const Decoder dec(kE4M3);
  alignas(64) float vs[kChunk] = {};  // V row scales; 0 past n (so are the weights).
  LoadRowScales<&KvRowRefs::v_scale>(rows, n, run_starts, vs);
  // Weights w_t as bf16, pairs (w_2i, w_2i+1) read as one uint32 (little endian: w_2i low).
  alignas(64) uint32_t wpair[kHeads][kChunk / 2];
  __m512 corr[kHeads];
  for (int h = 0; h < kHeads; ++h) {
    corr[h] = _mm512_setzero_ps();
    for (int k = 0; k < kChunk / 32; ++k) {
      // p past n is not ours to read (the softmax writes whole vectors only): masked loads.
      __m512 pv[2], sc[2], w[2];
      for (int i = 0; i < 2; ++i) {
        const int valid = std::clamp(n - 32 * k - 16 * i, 0, 16);
        pv[i] =
            _mm512_maskz_loadu_ps(__mmask16((1u << valid) - 1), p + h * kChunk + 32 * k + 16 * i);
        sc[i] = _mm512_load_ps(vs + 32 * k + 16 * i);
        w[i] = _mm512_mul_ps(pv[i], sc[i]);
      }
      // Elements of the second operand go to the low half.
      const __m512i wb = (__m512i)_mm512_cvtne2ps_pbh(w[1], w[0]);
      _mm512_store_si512(wpair[h] + 16 * k, wb);
      // l moves by sum_t (bf16(w_t) / v_scale_t - p_t): the p_t that the sums carry, less the
      // softmax's (rows of scale 0, and positions past n, carry nothing either way).
      for (int i = 0; i < 2; ++i) {
        const __m256i half = i == 0 ? _mm512_castsi512_si256(wb) : _mm512_extracti64x4_epi64(wb, 1);
        const __m512 wr = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
        const __mmask16 live = _mm512_cmpneq_ps_mask(sc[i], _mm512_setzero_ps());
        corr[h] = _mm512_mask_add_ps(
            corr[h], live, corr[h],
            _mm512_sub_ps(
                _mm512_div_ps(wr, _mm512_mask_blend_ps(live, _mm512_set1_ps(1.0f), sc[i])), pv[i]));
      }
    }
    l[h] += _mm512_reduce_add_ps(corr[h]);
  }
  // Row pairs (2i, 2i+1); an odd n pairs its last row with a row of zero codes (weight 0: the
  // last row itself could hold an infinity, and 0 x inf is NaN).
  alignas(64) static const uint8_t kZeroRow[kMaxDim] = {};
  const int pairs = (n + 1) / 2;
  const uint8_t* a_rows[kChunk / 2];
  const uint8_t* b_rows[kChunk / 2];
  for (int t = 0; t < pairs; ++t) {
    a_rows[t] = rows[2 * t].v_data;
    b_rows[t] = 2 * t + 1 < n ? rows[2 * t + 1].v_data : kZeroRow;
  }
  for (size_t j = 0; j < d; j += 64) {
    AccumulatePass<kE4M3, kHeads>(dec, a_rows, b_rows, pairs, wpair, alpha, j, acc, acc_stride);
  }
}

// Fp8Bf16QuantizeQuery's q16 with vcvtne2ps2bf16 (whose rounding Bf16 models; the steps' test
// holds the two to the same bits). Per 64 elements: word 8L + e of vector w is element
// 16L + 8w + e (Fp8Bf16KElement), so vector w takes the 8-element half w of each of the 4 float
// vectors.
KV_BF16_TARGET void QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  // Lanes 0-7 of a then of b (lo), lanes 8-15 of a then of b (hi).
  const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
  for (size_t j = 0; j < d; j += 64) {
    const __m512 q0 = _mm512_loadu_ps(q + j), q1 = _mm512_loadu_ps(q + j + 16);
    const __m512 q2 = _mm512_loadu_ps(q + j + 32), q3 = _mm512_loadu_ps(q + j + 48);
    for (int w = 0; w < 2; ++w) {
      const __m512i idx = w == 0 ? lo : hi;
      // Elements of the second operand go to the low half.
      const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_permutex2var_ps(q2, idx, q3),
                                             _mm512_permutex2var_ps(q0, idx, q1));
      _mm512_storeu_si512(q16 + j + 32 * size_t(w), (__m512i)b);
    }
  }
  *scale = 1.0f;
}

template <bool kE4M3>
void Scores(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
            const float* /*q_scale*/, int heads, size_t d, float* scores, const KvPrefetch& pf) {
  ForHeads(heads,
           [&]<int kHeads>() { ScoresT<kE4M3, kHeads>(rows, n, run_starts, q16, d, scores, pf); });
}

template <bool kE4M3>
void Accumulate(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride, float* l) {
  ForHeads(heads, [&]<int kHeads>() {
    AccumulateT<kE4M3, kHeads>(rows, n, run_starts, p, alpha, d, acc, acc_stride, l);
  });
}

bool CpuRunsBf16Steps() {
  __builtin_cpu_init();
  return CpuHasAvx512Bf16Bit() && CpuHasAvx512VbmiBit() && CpuHasF16cBit() &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

}  // namespace bf16_avx512
}  // namespace

const LowPrecisionSteps* Fp8StepsAvx512Bf16(KvDtype dtype) {
  static const LowPrecisionSteps e4m3{"avx512_bf16", &bf16_avx512::QuantizeQuery,
                                      &bf16_avx512::Scores<true>, &bf16_avx512::Accumulate<true>,
                                      &Fp8Bf16Element};
  static const LowPrecisionSteps e5m2{"avx512_bf16", &bf16_avx512::QuantizeQuery,
                                      &bf16_avx512::Scores<false>, &bf16_avx512::Accumulate<false>,
                                      &Fp8Bf16Element};
  static const bool runs = bf16_avx512::CpuRunsBf16Steps();
  if (!runs) return nullptr;
  if (dtype == KvDtype::kFp8E4M3) return &e4m3;
  return dtype == KvDtype::kFp8E5M2 ? &e5m2 : nullptr;
}

}  // namespace kvengine
