// Token tiles of the quantized matmul (quant_tile.h): included by quant_dot_x86.cc inside each
// x86 build's namespace (KV_QD_VNNI 1: AVX-512 VNNI, 0: AVX2), after quant_dot_x86-inl.h (whose
// block decoders and reductions it uses). Not a header.
//
// kTileRows weight rows are decoded together into a scratch buffer (codes in the tiled order,
// per-block scales), then every token's tiled activations (quant_tile.h) meet them. In the tiled
// order a group's 32-byte vector j holds 4-byte group j of each of its 8 blocks (lane k: block k),
// so products summed over a group's vectors leave block k's sum in lane k, with no transpose:
//   VNNI: one vpdpbusd chain over the four 64-byte vectors (lanes k and k + 8), folded once.
//   AVX2: maddubs + madd per 32-byte vector, summed. maddubs saturates its int16 pair sums, so
//     the operands must keep |pair| < 2^15: see the 32-element formats below.
//   32-element formats: the 8 block sums land in the lanes that quant_dot.h's 8 lane accumulators
//     take, so each (row, token) keeps its accumulator vector and the float steps run 8 blocks at
//     a time.
//   K-quants: sub-block s's sum lands in lane s; after the multiply by each sub-block's scale, the
//     8 rows' sums are reduced together (Transpose8Sums) so the super-block's float steps run with
//     one lane per row.
// Columns are walked in spans of kTileSpanGroups groups (the tile's rows' codes of a span, 8 KiB,
// stay in L1 while every token of a chunk passes), tokens in chunks of kTileTokens whose
// accumulators wait in a small buffer between spans.

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_* as the unused merge source of their masked
// builtins, which -Wmaybe-uninitialized reports at every inlined use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace KV_QD_NS {

#define KV_QT_FN __attribute__((target(KV_QD_TARGET), always_inline)) inline

constexpr int64_t kTileRows = 8;
constexpr int64_t kTileSpanGroups = 4;
constexpr int64_t kTileTokens = 64;

// One 256-column group of tiled bytes (quant_tile.h) in registers.
#if KV_QD_VNNI
struct TiledGroup {
  __m512i v[4];
};
#else
struct TiledGroup {
  __m256i v[8];
};
#endif

KV_QT_FN TiledGroup LoadGroup(const uint8_t* p) {
  TiledGroup g;
#if KV_QD_VNNI
  for (int v = 0; v < 4; ++v) g.v[v] = _mm512_loadu_si512(p + 64 * v);
#else
  for (int v = 0; v < 8; ++v)
    g.v[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * v));
#endif
  return g;
}

// blk[k]: block k's 32 codes in element order (k < 8) -> dst[0, 256): the group in tiled order
// (the transpose of the blocks' 4-byte groups).
KV_QT_FN void StoreTiled(const __m256i* blk, uint8_t* dst) {
#if KV_QD_VNNI
  __m512i t[4];  // t[i]: blocks 2 i and 2 i + 1.
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_inserti64x4(_mm512_castsi256_si512(blk[2 * i]), blk[2 * i + 1], 1);
  }
  for (int v = 0; v < 4; ++v) {
    // Lane L holds block k = L % 8's 4-byte group 2 v + L / 8: lane 8 (k % 4) + 2 v + L / 8 of
    // t[0], t[1] seen as one 32-lane table (k < 4), or of t[2], t[3] (k >= 4).
    const __m512i idx =
        _mm512_add_epi32(_mm512_set_epi32(25, 17, 9, 1, 25, 17, 9, 1, 24, 16, 8, 0, 24, 16, 8, 0),
                         _mm512_set1_epi32(2 * v));
    const __m512i lo = _mm512_permutex2var_epi32(t[0], idx, t[1]);
    const __m512i hi = _mm512_permutex2var_epi32(t[2], idx, t[3]);
    _mm512_storeu_si512(dst + 64 * v, _mm512_mask_blend_epi32(0xF0F0, lo, hi));
  }
#else
  // An 8 x 8 transpose of 32-bit lanes: pairs, then quads, then 128-bit halves.
  __m256i a[8], b[8];
  for (int i = 0; i < 4; ++i) {
    a[2 * i] = _mm256_unpacklo_epi32(blk[2 * i], blk[2 * i + 1]);
    a[2 * i + 1] = _mm256_unpackhi_epi32(blk[2 * i], blk[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // b[4 i + m]: lanes m and m + 4 of blocks 4 i .. 4 i + 3.
    const __m256i* p = a + 4 * i;
    b[4 * i + 0] = _mm256_unpacklo_epi64(p[0], p[2]);
    b[4 * i + 1] = _mm256_unpackhi_epi64(p[0], p[2]);
    b[4 * i + 2] = _mm256_unpacklo_epi64(p[1], p[3]);
    b[4 * i + 3] = _mm256_unpackhi_epi64(p[1], p[3]);
  }
  for (int m = 0; m < 4; ++m) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * m),
                        _mm256_permute2x128_si256(b[m], b[4 + m], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * (m + 4)),
                        _mm256_permute2x128_si256(b[m], b[4 + m], 0x31));
  }
#endif
}

// The largest |code| of a format's weights (for the AVX2 bounds below).
template <WeightFormat F>
inline constexpr int kMaxAbsCode = F == WeightFormat::kQ8_0   ? 128
                                   : F == WeightFormat::kQ4_0 ? 8
                                   : F == WeightFormat::kQ5_0 ? 16
                                   : F == WeightFormat::kQ4_1 ? 15
                                   : F == WeightFormat::kQ5_1 ? 31
                                   : F == WeightFormat::kQ4_K ? 15
                                   : F == WeightFormat::kQ5_K ? 31
                                                              : 63;  // Q6_K.

// AVX2: how many vectors' maddubs results may be added in int16 before they are widened, for
// products of unsigned codes up to max_u with signed codes of magnitude up to max_s: the largest
// power of two n <= 8 with n * 2 * max_u * max_s < 2^15 (1 when even one vector would not fit,
// which the callers never pass).
constexpr int Int16Sums(int max_u, int max_s) {
  int n = 8;
  while (n > 1 && n * 2 * max_u * max_s >= (1 << 15)) n /= 2;
  return n;
}

#if !KV_QD_VNNI
// The int16 pair sums of r's and the 32 bytes at p's products (kMemSigned: p is the signed
// operand).
template <bool kMemSigned>
KV_QT_FN __m256i Pairs(__m256i r, const uint8_t* p) {
  const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return kMemSigned ? _mm256_maddubs_epi16(r, m) : _mm256_maddubs_epi16(m, r);
}
#endif

// Lane k: the sum over the group's 32-byte vectors [j0, j1) of the products of u (unsigned) and
// s (signed) in 4-byte group k, one operand in registers and the other tiled at p (kMemSigned:
// p is s). AVX2 adds kSums16 vectors' pair sums in int16 before widening them (Int16Sums of the
// operands' bounds).
template <int kJ0, int kJ1, bool kMemSigned, int kSums16>
KV_QT_FN __m256i GroupDot(const TiledGroup& reg, const uint8_t* p) {
  static_assert(kJ0 % 2 == 0 && kJ1 % 2 == 0 && kJ0 < kJ1 && kJ1 <= 8);
  static_assert(kSums16 >= 1 && (kJ1 - kJ0) % kSums16 == 0);
#if KV_QD_VNNI
  __m512i z = _mm512_setzero_si512();
  for (int v = kJ0 / 2; v < kJ1 / 2; ++v) {
    const __m512i m = _mm512_loadu_si512(p + 64 * v);
    z = kMemSigned ? _mm512_dpbusd_epi32(z, reg.v[v], m) : _mm512_dpbusd_epi32(z, m, reg.v[v]);
  }
  return _mm256_add_epi32(_mm512_castsi512_si256(z), _mm512_extracti64x4_epi64(z, 1));
#else
  __m256i z[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // Two chains.
  for (int j = kJ0, c = 0; j < kJ1; j += kSums16, ++c) {
    __m256i p16 = Pairs<kMemSigned>(reg.v[j], p + 32 * j);
    for (int q = 1; q < kSums16; ++q) {
      p16 = _mm256_add_epi16(p16, Pairs<kMemSigned>(reg.v[j + q], p + 32 * (j + q)));
    }
    z[c & 1] = _mm256_add_epi32(z[c & 1], _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
  }
  return _mm256_add_epi32(z[0], z[1]);
#endif
}

#if !KV_QD_VNNI
// AVX2, Q8_0: lane k = the sum of block k's products of the signed activations xs with the signed
// weight codes tiled at p, as |w| x sign(xs, w) (|w| <= 128, |xs| <= 127: pairs fit int16).
KV_QT_FN __m256i GroupDotSigned(const TiledGroup& xs, const uint8_t* p) {
  __m256i z[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int j = 0; j < 8; ++j) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * j));
    z[j & 1] =
        _mm256_add_epi32(z[j & 1], DotU8S8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xs.v[j], w)));
  }
  return _mm256_add_epi32(z[0], z[1]);
}
#endif

// A thread's scratch of at least `bytes`, 64-byte aligned.
inline uint8_t* TileScratch(size_t bytes) {
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  const auto p = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + ((64 - p % 64) % 64);
}

// ------------------------------ 32-element formats

// Whether the tile takes the activations as stored (code + 128, the unsigned operand) against
// the signed weight codes and subtracts 128 * the sum of each block's codes: every build and
// format but AVX2's Q8_0. There |w| <= 128 against up to 255 would saturate maddubs's pairs
// (2 * 255 * 128 > 2^15; the other formats' |w| <= 31 give at most 15810), so it takes the
// activations back to signed codes and multiplies |w| by sign(x, w), as the per-row kernels do.
template <WeightFormat F>
inline constexpr bool kOffsetActivations = KV_QD_VNNI || F != WeightFormat::kQ8_0;

// A tile's decoded rows: codes[r * G * 256 ..] in tiled order (weights signed), and per block
// dw, mw (the f16 fields; 0 past the row's end; mw only with a min) and corr = 128 * the sum of
// the block's codes (with kOffsetActivations), each [r * G * 8 ..].
struct Tile32 {
  int64_t groups = 0;
  uint8_t* codes = nullptr;
  float* dw = nullptr;
  float* mw = nullptr;
  int32_t* corr = nullptr;
};

template <WeightFormat F, size_t kBlockBytes>
KV_QT_FN void DecodeRow32(const WeightView& w, int64_t r, int64_t i, const Tile32& tile) {
  constexpr bool kHasMin = !kSignedCodes<F>;
  constexpr bool kCorr = kOffsetActivations<F>;
  const int64_t g_count = tile.groups;
  const auto lanes = static_cast<size_t>(g_count) * 8;
  uint8_t* codes = tile.codes + i * g_count * 256;
  float* dw = tile.dw + i * g_count * 8;
  float* mw = kHasMin ? tile.mw + i * g_count * 8 : nullptr;
  int32_t* corr = kCorr ? tile.corr + i * g_count * 8 : nullptr;
  if (r < 0) {  // A padding row of the tile's last rows: zeros, its outputs never stored.
    std::memset(codes, 0, static_cast<size_t>(g_count) * 256);
    std::memset(dw, 0, sizeof(float) * lanes);
    if constexpr (kHasMin) std::memset(mw, 0, sizeof(float) * lanes);
    if constexpr (kCorr) std::memset(corr, 0, sizeof(int32_t) * lanes);
    return;
  }
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t j = 0; j < NumColumnBlocks(w); ++j) {
    const ColumnBlockView cb = ColumnBlockOf(w, j);
    const uint8_t* chunk = cb.base + static_cast<size_t>(r) * cb.stride;
    const int64_t nb = cb.width / 32;
    for (int64_t k0 = 0; k0 < nb; k0 += 8) {
      const int64_t count = std::min<int64_t>(8, nb - k0);
      const int64_t b0 = cb.c0 / 32 + k0;  // The row's block index; a multiple of 8.
      __m256i blk[8];
      for (int64_t k = 0; k < 8; ++k) {
        const uint8_t* p = chunk + static_cast<size_t>(k0 + k) * kBlockBytes;
        const bool valid = k < count;
        blk[k] = valid ? Codes32<F>(p) : _mm256_setzero_si256();
        dw[b0 + k] = valid ? Half(p) : 0.0f;
        if constexpr (kHasMin) mw[b0 + k] = valid ? Half(p + 2) : 0.0f;
        if constexpr (kCorr) corr[b0 + k] = 128 * HorizontalSum(DotU8S8(ones, blk[k]));
      }
      StoreTiled(blk, codes + 256 * (b0 / 8));
    }
  }
}

// Token x's groups [g0, g1) against the tile's 8 rows, into acc[r] (lane k: blocks of the row
// with b % 8 == k, quant_dot.h's lane accumulators).
template <WeightFormat F>
KV_QT_FN void Tile32Groups(const Tile32& tile, const uint8_t* x, int64_t g0, int64_t g1,
                           __m256* acc) {
  constexpr bool kHasMin = !kSignedCodes<F>;
  const int64_t g_count = tile.groups;
  const auto* dx = reinterpret_cast<const float*>(x + 256 * g_count);
  const float* sx = dx + 8 * g_count;
  for (int64_t g = g0; g < g1; ++g) {
    TiledGroup a = LoadGroup(x + 256 * g);
#if !KV_QD_VNNI
    if constexpr (!kOffsetActivations<F>) {  // Back to the signed codes: code + 128 ^ 0x80.
      for (__m256i& v : a.v) v = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
    }
#endif
    const __m256 dxv = _mm256_loadu_ps(dx + 8 * g);
    const __m256 sxv = kHasMin ? _mm256_loadu_ps(sx + 8 * g) : _mm256_setzero_ps();
    for (int64_t i = 0; i < kTileRows; ++i) {
      const size_t s = static_cast<size_t>(i * g_count * 8 + 8 * g);
      const uint8_t* wc = tile.codes + (i * g_count + g) * 256;
      __m256i isum;
      if constexpr (kOffsetActivations<F>) {
        // The activations are code + 128 <= 255.
        constexpr int kSums16 = Int16Sums(255, kMaxAbsCode<F>);
        isum =
            _mm256_sub_epi32(GroupDot<0, 8, /*kMemSigned=*/true, kSums16>(a, wc),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile.corr + s)));
      } else {
#if !KV_QD_VNNI
        isum = GroupDotSigned(a, wc);
#endif
      }
      __m256 term =
          _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(tile.dw + s), dxv), _mm256_cvtepi32_ps(isum));
      if constexpr (kHasMin) {
        term = _mm256_add_ps(term, _mm256_mul_ps(_mm256_loadu_ps(tile.mw + s), sxv));
      }
      acc[i] = _mm256_add_ps(acc[i], term);
    }
  }
}

template <WeightFormat F, size_t kBlockBytes>
KV_QT_FN void Tile32Rows(const WeightView& w, const uint8_t* xt, size_t xt_stride, int64_t n_tokens,
                         int64_t row_begin, int64_t row_end, float* y) {
  Tile32 tile;
  tile.groups = (w.cols + 255) / 256;
  const auto g_count = static_cast<size_t>(tile.groups);
  const size_t code_bytes = kTileRows * g_count * 256;
  const size_t lane_bytes = kTileRows * g_count * 8 * 4;
  const size_t acc_bytes = kTileTokens * kTileRows * sizeof(__m256);
  uint8_t* scratch = TileScratch(code_bytes + 3 * lane_bytes + acc_bytes);
  tile.codes = scratch;
  tile.dw = reinterpret_cast<float*>(scratch + code_bytes);
  tile.mw = reinterpret_cast<float*>(scratch + code_bytes + lane_bytes);
  tile.corr = reinterpret_cast<int32_t*>(scratch + code_bytes + 2 * lane_bytes);
  auto* acc_buf = reinterpret_cast<__m256*>(scratch + code_bytes + 3 * lane_bytes);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kTileRows) {
    const int64_t nr = std::min(kTileRows, row_end - r0);
    for (int64_t i = 0; i < kTileRows; ++i) {
      DecodeRow32<F, kBlockBytes>(w, i < nr ? r0 + i : -1, i, tile);
    }
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
      const int64_t nt = std::min(kTileTokens, n_tokens - t0);
      for (int64_t i = 0; i < nt * kTileRows; ++i) acc_buf[i] = _mm256_setzero_ps();
      for (int64_t g0 = 0; g0 < tile.groups; g0 += kTileSpanGroups) {
        const int64_t g1 = std::min(tile.groups, g0 + kTileSpanGroups);
        for (int64_t t = 0; t < nt; ++t) {
          __m256 acc[kTileRows];
          for (int64_t i = 0; i < kTileRows; ++i) acc[i] = acc_buf[t * kTileRows + i];
          Tile32Groups<F>(tile, xt + static_cast<size_t>(t0 + t) * xt_stride, g0, g1, acc);
          for (int64_t i = 0; i < kTileRows; ++i) acc_buf[t * kTileRows + i] = acc[i];
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        for (int64_t i = 0; i < nr; ++i) {
          y[(t0 + t) * w.rows + r0 + i] = ReduceLanes(acc_buf[t * kTileRows + i]);
        }
      }
    }
  }
}

// ------------------------------ K-quants

// A tile's decoded rows: codes[r * G * 256 ..] in tiled order (unsigned), per (row, super-block)
// a KTileBlock, and per super-block the rows' f16 fields dw[b * 8 + r], dmin[b * 8 + r].
struct KTileBlock {
  int32_t sc_lo[8];  // Q4_K / Q5_K: sub-block s's scale; Q6_K: scales[2 s] (elements 0..15 of s).
  int32_t sc_hi[8];  // Q6_K: scales[2 s + 1] (elements 16..31 of s).
  int16_t s16[16];   // Q4_K / Q5_K: mn[k / 2] against bsums[k]; Q6_K: scales[k].
};

struct KTile {
  int64_t blocks = 0;
  uint8_t* codes = nullptr;
  KTileBlock* meta = nullptr;
  float* dw = nullptr;
  float* dmin = nullptr;
};

template <WeightFormat F>
KV_QT_FN void DecodeRowK(const WeightView& w, int64_t r, int64_t i, const KTile& tile) {
  const int64_t nb_row = tile.blocks;
  uint8_t* codes = tile.codes + i * nb_row * 256;
  KTileBlock* meta = tile.meta + i * nb_row;
  if (r < 0) {  // A padding row (Tile32Rows).
    std::memset(codes, 0, static_cast<size_t>(nb_row) * 256);
    std::memset(static_cast<void*>(meta), 0, sizeof(KTileBlock) * nb_row);
    for (int64_t b = 0; b < nb_row; ++b) tile.dw[b * 8 + i] = tile.dmin[b * 8 + i] = 0.0f;
    return;
  }
  constexpr size_t kBytes = F == WeightFormat::kQ4_K   ? kQ4_KBlockBytes
                            : F == WeightFormat::kQ5_K ? kQ5_KBlockBytes
                                                       : kQ6_KBlockBytes;
  for (int64_t j = 0; j < NumColumnBlocks(w); ++j) {
    const ColumnBlockView cb = ColumnBlockOf(w, j);
    const uint8_t* chunk = cb.base + static_cast<size_t>(r) * cb.stride;
    for (int64_t k = 0; k < cb.width / 256; ++k) {
      const uint8_t* p = chunk + static_cast<size_t>(k) * kBytes;
      const int64_t b = cb.c0 / 256 + k;
      __m256i code[8];
      KTileBlock& m = meta[b];
      if constexpr (F == WeightFormat::kQ6_K) {
        Q6KCodes(p, code);
        const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
        for (int s = 0; s < 8; ++s) {
          m.sc_lo[s] = scales[2 * s];
          m.sc_hi[s] = scales[2 * s + 1];
        }
        for (int s = 0; s < 16; ++s) m.s16[s] = scales[s];
        tile.dw[b * 8 + i] = Half(p + 208);
        tile.dmin[b * 8 + i] = 0.0f;
      } else {
        Q45KCodes<F == WeightFormat::kQ5_K>(p, code);
        uint8_t sc_mn[16];
        _mm_storeu_si128(reinterpret_cast<__m128i*>(sc_mn), UnpackScaleMin(p + 4));
        for (int s = 0; s < 8; ++s) {
          m.sc_lo[s] = sc_mn[s];
          m.sc_hi[s] = 0;
          m.s16[2 * s] = m.s16[2 * s + 1] = sc_mn[8 + s];
        }
        tile.dw[b * 8 + i] = Half(p);
        tile.dmin[b * 8 + i] = Half(p + 2);
      }
      StoreTiled(code, codes + 256 * b);
    }
  }
}

// Token x's super-blocks [b0, b1) against the tile's 8 rows, into acc (lane r: row r's
// accumulator, quant_dot.h's K-quant steps).
template <WeightFormat F>
KV_QT_FN __m256 TileKBlocks(const KTile& tile, const uint8_t* x, int64_t b0, int64_t b1,
                            __m256 acc) {
  const int64_t nb_row = tile.blocks;
  const auto* dx = reinterpret_cast<const float*>(x + 256 * nb_row);
  const auto* bsums = reinterpret_cast<const int16_t*>(x + 256 * nb_row + sizeof(float) * nb_row);
  for (int64_t b = b0; b < b1; ++b) {
    const TiledGroup xv = LoadGroup(x + 256 * b);
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums + 16 * b));
    __m256i isum[kTileRows], msum[kTileRows];
    for (int64_t i = 0; i < kTileRows; ++i) {
      const uint8_t* wc = tile.codes + (i * nb_row + b) * 256;
      const KTileBlock& m = tile.meta[i * nb_row + b];
      const __m256i sc_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.sc_lo));
      const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.s16));
      // The weights are the unsigned operand here, the q8_K codes (|x| <= 128) the signed one.
      constexpr int kSums16 = Int16Sums(kMaxAbsCode<F>, 128);
      if constexpr (F == WeightFormat::kQ6_K) {
        // Tiled vectors 0..3 hold elements 0..15 of every sub-block, 4..7 elements 16..31.
        const __m256i sc_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.sc_hi));
        const __m256i dot =
            _mm256_add_epi32(_mm256_mullo_epi32(GroupDot<0, 4, false, kSums16>(xv, wc), sc_lo),
                             _mm256_mullo_epi32(GroupDot<4, 8, false, kSums16>(xv, wc), sc_hi));
        const __m256i bias = _mm256_madd_epi16(s16, bs);
        isum[i] = _mm256_sub_epi32(dot, _mm256_slli_epi32(bias, 5));  // dot - 32 bias.
      } else {
        isum[i] = _mm256_mullo_epi32(GroupDot<0, 8, false, kSums16>(xv, wc), sc_lo);
        msum[i] = _mm256_madd_epi16(s16, bs);
      }
    }
    const __m256 d = _mm256_set1_ps(dx[b]);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(tile.dw + 8 * b), d),
                                           _mm256_cvtepi32_ps(Transpose8Sums(isum))));
    if constexpr (F != WeightFormat::kQ6_K) {
      acc = _mm256_sub_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(tile.dmin + 8 * b), d),
                                             _mm256_cvtepi32_ps(Transpose8Sums(msum))));
    }
  }
  return acc;
}

template <WeightFormat F>
KV_QT_FN void TileKRows(const WeightView& w, const uint8_t* xt, size_t xt_stride, int64_t n_tokens,
                        int64_t row_begin, int64_t row_end, float* y) {
  KTile tile;
  tile.blocks = w.cols / 256;
  const auto nb_row = static_cast<size_t>(tile.blocks);
  const size_t code_bytes = kTileRows * nb_row * 256;
  const size_t meta_bytes = kTileRows * nb_row * sizeof(KTileBlock);
  const size_t lane_bytes = nb_row * 8 * sizeof(float);
  const size_t acc_bytes = kTileTokens * sizeof(__m256);
  uint8_t* scratch = TileScratch(code_bytes + meta_bytes + 2 * lane_bytes + acc_bytes);
  tile.codes = scratch;
  tile.meta = reinterpret_cast<KTileBlock*>(scratch + code_bytes);
  tile.dw = reinterpret_cast<float*>(scratch + code_bytes + meta_bytes);
  tile.dmin = reinterpret_cast<float*>(scratch + code_bytes + meta_bytes + lane_bytes);
  auto* acc_buf = reinterpret_cast<__m256*>(scratch + code_bytes + meta_bytes + 2 * lane_bytes);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kTileRows) {
    const int64_t nr = std::min(kTileRows, row_end - r0);
    for (int64_t i = 0; i < kTileRows; ++i) DecodeRowK<F>(w, i < nr ? r0 + i : -1, i, tile);
    // Lane r stored when r < nr.
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(nr)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
      const int64_t nt = std::min(kTileTokens, n_tokens - t0);
      for (int64_t t = 0; t < nt; ++t) acc_buf[t] = _mm256_setzero_ps();
      for (int64_t b0 = 0; b0 < tile.blocks; b0 += kTileSpanGroups) {
        const int64_t b1 = std::min(tile.blocks, b0 + kTileSpanGroups);
        for (int64_t t = 0; t < nt; ++t) {
          acc_buf[t] = TileKBlocks<F>(tile, xt + static_cast<size_t>(t0 + t) * xt_stride, b0, b1,
                                      acc_buf[t]);
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        _mm256_maskstore_ps(y + (t0 + t) * w.rows + r0, keep, acc_buf[t]);
      }
    }
  }
}

__attribute__((target(KV_QD_TARGET))) void QuantTileRows(const WeightView& w, const uint8_t* xt,
                                                         size_t xt_stride, int64_t n_tokens,
                                                         int64_t row_begin, int64_t row_end,
                                                         float* y) {
  const WeightFormat format = *WeightFormatOf(w.type);
  const bool done = WithFormat32(
      format, [&]<WeightFormat F, size_t kBlockBytes>() __attribute__((target(KV_QD_TARGET))) {
        Tile32Rows<F, kBlockBytes>(w, xt, xt_stride, n_tokens, row_begin, row_end, y);
      });
  if (done) return;
  switch (format) {
    case WeightFormat::kQ4_K:
      return TileKRows<WeightFormat::kQ4_K>(w, xt, xt_stride, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ5_K:
      return TileKRows<WeightFormat::kQ5_K>(w, xt, xt_stride, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ6_K:
      return TileKRows<WeightFormat::kQ6_K>(w, xt, xt_stride, n_tokens, row_begin, row_end, y);
    default:
      break;
  }
  KV_CHECK(false) << "no quantized tile for a float format";
}

#undef KV_QT_FN

}  // namespace KV_QD_NS

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
