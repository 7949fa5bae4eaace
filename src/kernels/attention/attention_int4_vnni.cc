// The int4 score steps for AVX-512 VNNI (attention_int4.h), raw AVX-512 intrinsics with their own
// target attribute (Highway 1.0.3 does not build its AVX3_DL target here); they run only where
// Int4StepsAvx512Vnni() returned them.
//
// Micro-tiles of 4 positions as 2 pairs of rows x up to 4 heads = 8 int32 accumulators. Per piece
// of 64 elements (32 bytes of a row, groups 2j and 2j + 1) the two rows of a pair share one vector:
// 128-bit lane L holds group 2j + L % 2 of the pair's row L / 2. Its low and high nibbles are two
// vectors of unsigned codes that vpdpbusd multiplies by the head's even and odd q8 elements
// (broadcast to both halves). Two levels of a transposed tree (exact int32 adds) leave, per pair,
// one vector whose lane 4L + h is head h's group sum I of lane L; those become floats, times the
// lanes' f16 scales, plus the lanes' mins times Qs, into a float accumulator per pair. After the
// last piece one more level adds each row's two lanes (even and odd groups).
#include "kernels/attention/attention_int4.h"

// GCC 12 reports its own _mm512_undefined_* placeholders inside the AVX-512 intrinsics as
// uninitialized (GCC bug 105593); nothing here reads an uninitialized value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/attention/attention_int16.h"

#define KV_INT4_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))

namespace kvengine {
namespace {
// Its own namespace: unity builds compile this file beside the other implementations.
namespace int4_vnni {

constexpr int kChunk = kAttentionChunk;
constexpr int kPosTile = kAttentionPosTile;  // Positions per micro-tile: 2 pairs.
static_assert(kPosTile == 4);
constexpr size_t kMaxPieces = 512 / 64;  // Int4Int8Applies.
constexpr float kInt8Max = 127.0f;

// acc += 4-element dot products of unsigned a and signed b bytes (vpdpbusd). As DpWssd in
// attention_vnni.cc: the asm form keeps GCC 12 from copying each accumulator around every
// instruction (here; the value pass below is the other way round).
KV_INT4_TARGET __attribute__((always_inline)) inline void DpBusd(__m512i& acc, __m512i a,
                                                                 __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
#else
  acc = _mm512_dpbusd_epi32(acc, a, b);
#endif
}

// One level of the transposed tree: lanes of a and b summed in pairs within 128-bit lanes, a's
// and b's sums side by side (exact: int32).
template <bool kQwords>
KV_INT4_TARGET __attribute__((always_inline)) inline __m512i Fold(__m512i a, __m512i b) {
  if constexpr (kQwords) {
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
  } else {
    return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  }
}

// 32 bytes of row a then 32 of row b.
KV_INT4_TARGET __attribute__((always_inline)) inline __m512i LoadPair(const uint8_t* a,
                                                                      const uint8_t* b) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

template <int kHeads>
KV_INT4_TARGET void ScoresT(const KvRowRefs* rows, int n, const int16_t* q16, const float* q_scale,
                            size_t d, float* scores, const KvPrefetch& pf) {
  const size_t pieces = d / 64;
  // qs[j]: lane 4L + h = head h's Qs of group 2j + L % 2 (0 for heads past kHeads).
  alignas(64) float qs[kMaxPieces][16] = {};
  for (size_t j = 0; j < pieces; ++j) {
    for (int lane = 0; lane < 16; ++lane) {
      const int h = lane % 4;
      if (h < kHeads) {
        qs[j][lane] = Int4Int8QuerySum(q16 + size_t(h) * d, d, 2 * j + size_t(lane / 4 % 2));
      }
    }
  }
  alignas(64) float sum[kHeads][kChunk];  // F_even + F_odd (whole tiles written).
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Lane 4L + h takes element 2L (scale) or 2L + 1 (min) of a pair's 8 converted f16 parameters:
  // row a's groups 2j, 2j + 1, then row b's.
  const __m512i scale_idx = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
  const __m512i min_idx = _mm512_add_epi32(scale_idx, _mm512_set1_epi32(1));
  // Lane 4h + p of the result takes lane 4p + h (positions by head).
  const __m512i by_head = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const int tiles = (n + kPosTile - 1) / kPosTile;
  const int pf_per_tile = (pf.n + tiles - 1) / tiles;  // All of pf's rows by the last tile.
  int pf_next = 0;
  for (int t0 = 0; t0 < n; t0 += kPosTile) {
    for (int i = 0; i < pf_per_tile; ++i) PrefetchKvRow(pf, pf_next++);
    const KvRowRefs* r = rows + t0;                            // Padded past n to the whole tile.
    __m512 f[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};  // Per pair: lanes 4L + h.
    for (size_t j = 0; j < pieces; ++j) {
      __m512i lo[2], hi[2];
      for (int k = 0; k < 2; ++k) {
        const __m512i x = LoadPair(r[2 * k].k_data + 32 * j, r[2 * k + 1].k_data + 32 * j);
        lo[k] = _mm512_and_si512(x, nibble);
        hi[k] = _mm512_and_si512(_mm512_srli_epi16(x, 4), nibble);
      }
      __m512i acc[8];  // [pair][head]; heads past kHeads stay zero.
      for (__m512i& a : acc) a = _mm512_setzero_si512();
      for (int h = 0; h < kHeads; ++h) {
        const int8_t* q8 = reinterpret_cast<const int8_t*>(q16 + size_t(h) * d) + 64 * j;
        const __m512i even =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8)));
        const __m512i odd =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 32)));
        for (int k = 0; k < 2; ++k) {
          DpBusd(acc[4 * k + h], lo[k], even);
          DpBusd(acc[4 * k + h], hi[k], odd);
        }
      }
      const __m512 qsv = _mm512_load_ps(qs[j]);
      for (int k = 0; k < 2; ++k) {
        // Lane 4L + h: head h's sum over 128-bit lane L (one group of one row).
        const __m512i isum = Fold<true>(Fold<false>(acc[4 * k], acc[4 * k + 1]),
                                        Fold<false>(acc[4 * k + 2], acc[4 * k + 3]));
        const __m128i params = _mm_unpacklo_epi64(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[2 * k].k_scale + 8 * j)),
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r[2 * k + 1].k_scale + 8 * j)));
        const __m512 p = _mm512_castps256_ps512(_mm256_cvtph_ps(params));
        f[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_permutexvar_ps(scale_idx, p), f[k]);
        f[k] = _mm512_fmadd_ps(_mm512_permutexvar_ps(min_idx, p), qsv, f[k]);
      }
    }
    // 128-bit lane i: position t0 + i's even groups plus its odd ones, by head.
    const __m512 both = _mm512_add_ps(_mm512_shuffle_f32x4(f[0], f[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_f32x4(f[0], f[1], _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, _mm512_permutexvar_ps(by_head, both));
    for (int h = 0; h < kHeads; ++h) std::memcpy(&sum[h][t0], lanes + 4 * h, 4 * sizeof(float));
  }
  for (int h = 0; h < kHeads; ++h) {
    const __m512 qsc = _mm512_set1_ps(q_scale[h]);
    for (int t = 0; t < n; t += 16) {
      const __mmask16 tail = __mmask16((1u << std::min(16, n - t)) - 1);  // sum ends at the tile.
      _mm512_storeu_ps(scores + h * kChunk + t,
                       _mm512_mul_ps(_mm512_maskz_load_ps(tail, &sum[h][t]), qsc));
    }
  }
}

// ------------------------------ values

constexpr size_t kMaxValueDim = 256;              // Int4Int8ValuesApply.
constexpr size_t kMaxGroups = kMaxValueDim / 32;  // G: groups per V row.
constexpr float kInt16Max = 32767.0f;

// vpermw indices that turn 32 int16 weights in row-major (row, group) order, rows r0 .. r0 +
// 32 / G - 1, as vpackssdw left them (lane L of its two vectors of 16: 4 of the first, then 4 of
// the second), into the weight table's order (below) for G groups per row.
struct TableOrder {
  alignas(64) int16_t idx[kMaxGroups + 1][32];
  TableOrder() {
    const auto packed = [](int f) { return 8 * (f % 16 / 4) + 4 * (f / 16) + f % 4; };
    for (int groups = 2; groups <= int(kMaxGroups); groups *= 2) {
      const int pieces = groups / 2;
      for (int o = 0; o < 32; ++o) {
        const int dw = o / 2, half = o % 2, gg = dw % 2, r = dw / 2 % 2, j = dw / 4 % pieces,
                  quad = dw / (4 * pieces);
        idx[groups][o] = int16_t(packed((4 * quad + 2 * r + half) * groups + 2 * j + gg));
      }
    }
  }
};

const TableOrder& TheTableOrder() {
  static const TableOrder t;
  return t;
}

// One pass over the chunk's quads of rows for half P of piece j: its 32 elements per row of up to
// 4 heads, 4 int32 accumulators per head, then folded, scaled and added into acc. Not inlined:
// inside AccumulateT, next to its weight arrays, GCC 12 copied and spilled the 16 accumulators
// around the loop (values 13.1 against 10.5 ns per position, 4 heads, d = 128, in L1).
template <int kHeads, int kPass>
KV_INT4_TARGET __attribute__((noinline)) void AccumulatePass(
    const KvRowRefs* rows, int quads, size_t j, size_t pieces, const uint32_t* const* table,
    const float* scale, const float* mins,  // [h][16]
    const float* alpha, float* acc, size_t acc_stride) {
  const __m512i low4 = _mm512_set1_epi32(0x000F000F);
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512i ia[kHeads][4];
  for (int h = 0; h < kHeads; ++h) {
    for (int m = 0; m < 4; ++m) ia[h][m] = _mm512_setzero_si512();
  }
  for (int q = 0; q < quads; ++q) {
    const KvRowRefs* r = rows + 4 * q;  // Padded to whole quads.
    const __m512i x = LoadPair(r[0].v_data + 32 * j, r[2].v_data + 32 * j);
    const __m512i y = LoadPair(r[1].v_data + 32 * j, r[3].v_data + 32 * j);
    // Dword 4L + u: word u (+ 4 in the high pass) of lane L of the even row, then of the odd row.
    const __m512i u = kPass == 0 ? _mm512_unpacklo_epi16(x, y) : _mm512_unpackhi_epi16(x, y);
    const __m512i v[4] = {
        _mm512_and_si512(u, low4), _mm512_and_si512(_mm512_srli_epi16(u, 4), low4),
        _mm512_and_si512(_mm512_srli_epi16(u, 8), low4), _mm512_srli_epi16(u, 12)};
    for (int h = 0; h < kHeads; ++h) {
      const __m512i w = _mm512_permutexvar_epi32(
          spread, _mm512_castsi128_si512(_mm_loadu_si128(
                      reinterpret_cast<const __m128i*>(table[h] + (size_t(q) * pieces + j) * 4))));
      // The intrinsic, not an asm DpWssd as in attention_vnni.cc: here GCC 12 kept the asm's
      // accumulators in memory, loading and storing one around every instruction (2.7x slower).
      for (int m = 0; m < 4; ++m) ia[h][m] = _mm512_dpwssd_epi32(ia[h][m], v[m], w);
    }
  }
  // Lane 4L + u of group lane L (L: 2r + gg) and of L + 2 hold the same element of two row pairs.
  const __m512i group_of_lane = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i g_idx = _mm512_add_epi32(group_of_lane, _mm512_set1_epi32(int(2 * j)));
  for (int h = 0; h < kHeads; ++h) {
    const __m512 sv = _mm512_permutexvar_ps(g_idx, _mm512_load_ps(scale + 16 * h));
    const __m512 mv = _mm512_permutexvar_ps(g_idx, _mm512_load_ps(mins + 16 * h));
    const __m512 al = _mm512_set1_ps(alpha[h]);
    float* dst = acc + size_t(h) * acc_stride + 64 * j + 32 * kPass;
    for (int k = 0; k < 2; ++k) {
      const __m512i a = ia[h][2 * k], b = ia[h][2 * k + 1];
      const __m512i sum = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                           _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
      const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), sv, mv);
      _mm512_storeu_ps(dst + 16 * k, _mm512_fmadd_ps(_mm512_loadu_ps(dst + 16 * k), al, t));
    }
  }
}

template <int kHeads>
KV_INT4_TARGET void AccumulateT(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                                const float* alpha, size_t d, float* acc, size_t acc_stride) {
  const size_t groups = d / 32, pieces = groups / 2, flat = size_t(kChunk) * groups;
  // The chunk's V parameters as f16 (s, m) pairs, row-major (row, group); zeros past n.
  alignas(64) uint16_t params16[kChunk * kMaxGroups * 2];
  for (int a = 0; a < n;) {  // One copy per run of rows (adjacent scale bytes).
    const uint64_t later = a + 1 < 64 ? run_starts >> (a + 1) : 0;
    const int b = later == 0 ? n : std::min(n, a + 1 + std::countr_zero(later));
    std::memcpy(params16 + size_t(a) * 2 * groups, rows[a].v_scale, size_t(b - a) * 4 * groups);
    a = b;
  }
  std::memset(params16 + size_t(n) * 2 * groups, 0, size_t(kChunk - n) * 4 * groups);
  // ... as f32, scales and mins apart: ps / pm [row][group].
  alignas(64) float ps[kChunk * kMaxGroups], pm[kChunk * kMaxGroups];
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (size_t f = 0; f < flat; f += 16) {
    const __m512 a =
        _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(params16 + 2 * f)));
    const __m512 b =
        _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(params16 + 2 * f + 16)));
    _mm512_store_ps(ps + f, _mm512_permutex2var_ps(a, even, b));
    _mm512_store_ps(pm + f, _mm512_permutex2var_ps(a, odd, b));
  }
  // Per head: the weight table (dword (W_2p,g, W_2p+1,g) for pair p, ordered quad by quad, then
  // piece by piece, then the quad's two pairs, then the piece's two groups: one 16-byte load per
  // quad and piece), the groups' S_g and M_g.
  alignas(64) uint32_t table[kHeads][kChunk / 2 * kMaxGroups];
  alignas(64) float scale[kHeads][16] = {}, mins[kHeads][16] = {};  // Lanes g < G.
  const int shift = std::countr_zero(groups);  // Row of flat lane f: f >> shift.
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i order = _mm512_load_si512(TheTableOrder().idx[groups]);
  // Per v % G: the lanes' rows within their 16-row block (vectors v of G hold rows 16 v / G ..).
  __m512i row_of[kMaxGroups];
  for (size_t r = 0; r < groups; ++r) {
    row_of[r] = _mm512_srli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(int(16 * r))), shift);
  }
  for (int h = 0; h < kHeads; ++h) {
    const float* ph = p + h * kChunk;
    // p past n is not ours to read (the softmax writes whole vectors only): masked loads.
    __m512 pv[kChunk / 16];
    for (int k = 0; k < kChunk / 16; ++k) {
      pv[k] =
          _mm512_maskz_loadu_ps(__mmask16((1u << std::clamp(n - 16 * k, 0, 16)) - 1), ph + 16 * k);
    }
    __m512 w[kChunk * kMaxGroups / 16];
    __m512 wmax = _mm512_setzero_ps(), msum = _mm512_setzero_ps();
    for (size_t v = 0; v < flat / 16; ++v) {
      // p of each lane's row: rows 16 v / G .. lie in 16-row block v / G.
      const __m512 pe = _mm512_permutexvar_ps(row_of[v & (groups - 1)], pv[v >> shift]);
      w[v] = _mm512_mul_ps(pe, _mm512_load_ps(ps + 16 * v));
      wmax = _mm512_max_ps(wmax, w[v]);
      msum = _mm512_fmadd_ps(pe, _mm512_load_ps(pm + 16 * v), msum);
    }
    // Lanes f and f + G hold the same group: fold to every lane's group total.
    for (int s = 8; s >= int(groups); s /= 2) {
      const __m512i rot =
          _mm512_and_si512(_mm512_add_epi32(lane, _mm512_set1_epi32(s)), _mm512_set1_epi32(15));
      wmax = _mm512_max_ps(wmax, _mm512_permutexvar_ps(rot, wmax));
      msum = _mm512_add_ps(msum, _mm512_permutexvar_ps(rot, msum));
    }
    const __mmask16 live = _mm512_cmp_ps_mask(wmax, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 inv = _mm512_maskz_div_ps(live, _mm512_set1_ps(kInt16Max), wmax);
    _mm512_mask_storeu_ps(scale[h], __mmask16((1u << groups) - 1),
                          _mm512_div_ps(wmax, _mm512_set1_ps(kInt16Max)));
    _mm512_mask_storeu_ps(mins[h], __mmask16((1u << groups) - 1), msum);
    for (size_t v = 0; v < flat / 16; v += 2) {
      // Round to nearest even; 0 <= W <= 32767 (w * inv <= 32767 up to rounding: saturated).
      const __m512i both = _mm512_packs_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(w[v], inv)),
                                              _mm512_cvtps_epi32(_mm512_mul_ps(w[v + 1], inv)));
      _mm512_store_si512(table[h] + 8 * v, _mm512_permutexvar_epi16(order, both));
    }
  }
  const uint32_t* tables[4] = {table[0], table[kHeads > 1], table[kHeads > 2 ? 2 : 0],
                               table[kHeads > 3 ? 3 : 0]};
  const int quads = (n + 3) / 4;
  for (size_t j = 0; j < pieces; ++j) {
    AccumulatePass<kHeads, 0>(rows, quads, j, pieces, tables, &scale[0][0], &mins[0][0], alpha, acc,
                              acc_stride);
    AccumulatePass<kHeads, 1>(rows, quads, j, pieces, tables, &scale[0][0], &mins[0][0], alpha, acc,
                              acc_stride);
  }
}

// Int4Int8QuantizeQuery's encoding: per 64 elements, the even ones' and the odd ones' bytes.
KV_INT4_TARGET void QuantizeQuery(const float* q, size_t d, int16_t* q16, float* scale) {
  __m512 amax_v = _mm512_setzero_ps();
  __mmask16 nonfinite = 0;
  const __m512 inf = _mm512_set1_ps(INFINITY);
  for (size_t i = 0; i < d; i += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(q + i));
    nonfinite |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // inf or NaN.
    amax_v = _mm512_max_ps(amax_v, a);
  }
  const float amax = _mm512_reduce_max_ps(amax_v);
  const bool finite = nonfinite == 0;
  const __m512 inv = _mm512_set1_ps(amax > 0.0f && finite ? kInt8Max / amax : 0.0f);
  uint8_t* bytes = reinterpret_cast<uint8_t*>(q16);
  // Lanes 0-7 of a then of b: the even elements of 32 (as pairs of a and b's lanes ... ).
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  alignas(64) float sums[512 / 32];
  for (size_t j = 0; j < d; j += 64) {
    __m512i c[4];  // Codes of elements j + 16i .. j + 16i + 15 (0 where q is not finite).
    for (int i = 0; i < 4; ++i) {
      const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(q + j + 16 * i), inv);
      // Round to nearest even; |x| <= 127 up to rounding: clamped for the slack.
      const __m512 xr = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512 xc =
          _mm512_min_ps(_mm512_max_ps(xr, _mm512_set1_ps(-kInt8Max)), _mm512_set1_ps(kInt8Max));
      c[i] = finite ? _mm512_cvtps_epi32(xc) : _mm512_setzero_si512();
    }
    for (int g = 0; g < 2; ++g) {  // Groups j / 32 and j / 32 + 1.
      sums[j / 32 + size_t(g)] =
          float(_mm512_reduce_add_epi32(_mm512_add_epi32(c[2 * g], c[2 * g + 1])));
    }
    // Elements j + 2b (b < 32) are lanes 2b of c[0..3] taken pairwise: vectors 0-1, then 2-3.
    const __m512i e0 = _mm512_permutex2var_epi32(c[0], even, c[1]);
    const __m512i e1 = _mm512_permutex2var_epi32(c[2], even, c[3]);
    const __m512i o0 = _mm512_permutex2var_epi32(c[0], odd, c[1]);
    const __m512i o1 = _mm512_permutex2var_epi32(c[2], odd, c[3]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + j), _mm512_cvtepi32_epi8(e0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + j + 16), _mm512_cvtepi32_epi8(e1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + j + 32), _mm512_cvtepi32_epi8(o0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + j + 48), _mm512_cvtepi32_epi8(o1));
  }
  std::memcpy(bytes + d, sums, d / 32 * sizeof(float));
  *scale = finite ? amax / kInt8Max : NAN;
}

void Scores(const KvRowRefs* rows, int n, uint64_t /*run_starts*/, const int16_t* q16,
            const float* q_scale, int heads, size_t d, float* scores, const KvPrefetch& pf) {
  ForHeads(heads, [&]<int kHeads>() { ScoresT<kHeads>(rows, n, q16, q_scale, d, scores, pf); });
}

void Accumulate(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                const float* alpha, int heads, size_t d, float* acc, size_t acc_stride,
                float* /*l*/) {  // l: the int16 weights' rounding is not folded into it.
  ForHeads(heads, [&]<int kHeads>() {
    AccumulateT<kHeads>(rows, n, run_starts, p, alpha, d, acc, acc_stride);
  });
}

}  // namespace int4_vnni
}  // namespace

const LowPrecisionSteps* Int4StepsAvx512Vnni(bool values) {
  static const LowPrecisionSteps k{"vnni", &int4_vnni::QuantizeQuery, &int4_vnni::Scores, nullptr,
                                   nullptr};
  static const LowPrecisionSteps kv{"vnni", &int4_vnni::QuantizeQuery, &int4_vnni::Scores,
                                    &int4_vnni::Accumulate, &Int4Int8Element};
  // The same instructions as the int8 steps' (AVX512F/BW/VL, VNNI, F16C, FMA).
  if (Int8StepsAvx512Vnni() == nullptr) return nullptr;
  return values ? &kv : &k;
}

}  // namespace kvengine
