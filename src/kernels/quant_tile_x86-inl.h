// Token tiles of the quantized matmul (quant_tile.h) for the AVX-512 VNNI build: included by
// quant_dot_x86.cc inside the VNNI build's namespace, after quant_dot_x86-inl.h (whose block
// decoders and reductions it uses). Not a header.
//
// kTileRows weight rows are decoded together into a scratch buffer (codes in the tiled order,
// per-block scales), then every token's tiled activations (quant_tile.h) meet them:
//   32-element formats: one vpdpbusd chain per (row, token, 256-column group) leaves block k's sum
//     in lanes k and k + 8; one add folds them, giving the 8 block sums in the lanes that
//     quant_dot.h's 8 lane accumulators take, so each (row, token) keeps its accumulator vector
//     and the float steps run 8 blocks at a time.
//   K-quants: the chain leaves sub-block s's sum in lanes s and s + 8; after the fold and the
//     multiply by each sub-block's scale, the 8 rows' sums are reduced together (Transpose8Sums)
//     so the super-block's float steps run with one lane per row.
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

// blk[k]: block k's 32 codes in element order (k < 8) -> out[0..4): the group in tiled order.
KV_QT_FN void Interleave8(const __m256i* blk, __m512i* out) {
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
    out[v] = _mm512_mask_blend_epi32(0xF0F0, lo, hi);
  }
}

// The sum of a 16-lane chain's two halves: lane k = lanes k and k + 8.
KV_QT_FN __m256i Fold(__m512i z) {
  return _mm256_add_epi32(_mm512_castsi512_si256(z), _mm512_extracti64x4_epi64(z, 1));
}

// z + the products of the 4 tiled vectors a (unsigned) with b[0..4) (signed).
KV_QT_FN __m512i Chain4(__m512i z, const __m512i* a, const uint8_t* b) {
  for (int v = 0; v < 4; ++v) z = _mm512_dpbusd_epi32(z, a[v], _mm512_loadu_si512(b + 64 * v));
  return z;
}

// A thread's scratch of at least `bytes`, 64-byte aligned.
inline uint8_t* TileScratch(size_t bytes) {
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  const auto p = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + ((64 - p % 64) % 64);
}

// ------------------------------ 32-element formats

// A tile's decoded rows: codes[r * G * 256 ..] in tiled order (weights signed), and per block
// dw, mw (the f16 fields; 0 past the row's end) and corr = 128 * the sum of the block's codes
// (the activations are code + 128), each [r * G * 8 ..].
struct Tile32 {
  int64_t groups = 0;
  uint8_t* codes = nullptr;
  float* dw = nullptr;
  float* mw = nullptr;
  int32_t* corr = nullptr;
};

template <WeightFormat F, size_t kBlockBytes>
KV_QT_FN void DecodeRow32(const WeightView& w, int64_t r, int64_t i, const Tile32& tile) {
  const int64_t g_count = tile.groups;
  uint8_t* codes = tile.codes + i * g_count * 256;
  float* dw = tile.dw + i * g_count * 8;
  float* mw = tile.mw + i * g_count * 8;
  int32_t* corr = tile.corr + i * g_count * 8;
  if (r < 0) {  // A padding row of the tile's last rows: zeros, its outputs never stored.
    std::memset(codes, 0, static_cast<size_t>(g_count) * 256);
    std::memset(dw, 0, sizeof(float) * 8 * g_count);
    std::memset(mw, 0, sizeof(float) * 8 * g_count);
    std::memset(corr, 0, sizeof(int32_t) * 8 * g_count);
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
        if (k < count) {
          blk[k] = Codes32<F>(p);
          dw[b0 + k] = Half(p);
          mw[b0 + k] = kSignedCodes<F> ? 0.0f : Half(p + 2);
          corr[b0 + k] =
              128 * HorizontalSum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, blk[k]));
        } else {
          blk[k] = _mm256_setzero_si256();
          dw[b0 + k] = mw[b0 + k] = 0.0f;
          corr[b0 + k] = 0;
        }
      }
      __m512i out[4];
      Interleave8(blk, out);
      for (int v = 0; v < 4; ++v) _mm512_storeu_si512(codes + 256 * (b0 / 8) + 64 * v, out[v]);
    }
  }
}

// Token x's groups [g0, g1) against the tile's 8 rows, into acc[r] (lane k: blocks of the row
// with b % 8 == k, quant_dot.h's lane accumulators).
template <bool kHasMin>
KV_QT_FN void Tile32Groups(const Tile32& tile, const uint8_t* x, int64_t g0, int64_t g1,
                           __m256* acc) {
  const int64_t g_count = tile.groups;
  const auto* dx = reinterpret_cast<const float*>(x + 256 * g_count);
  const float* sx = dx + 8 * g_count;
  for (int64_t g = g0; g < g1; ++g) {
    __m512i a[4];
    for (int v = 0; v < 4; ++v) a[v] = _mm512_loadu_si512(x + 256 * g + 64 * v);
    const __m256 dxv = _mm256_loadu_ps(dx + 8 * g);
    const __m256 sxv = kHasMin ? _mm256_loadu_ps(sx + 8 * g) : _mm256_setzero_ps();
    for (int64_t i = 0; i < kTileRows; ++i) {
      const size_t s = static_cast<size_t>(i * g_count * 8 + 8 * g);
      const __m512i z = Chain4(_mm512_setzero_si512(), a, tile.codes + (i * g_count + g) * 256);
      const __m256i isum = _mm256_sub_epi32(
          Fold(z), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile.corr + s)));
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
          Tile32Groups<!kSignedCodes<F>>(tile, xt + static_cast<size_t>(t0 + t) * xt_stride, g0, g1,
                                         acc);
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
        UnpackScaleMin(p + 4, sc_mn);
        for (int s = 0; s < 8; ++s) {
          m.sc_lo[s] = sc_mn[s];
          m.sc_hi[s] = 0;
          m.s16[2 * s] = m.s16[2 * s + 1] = sc_mn[8 + s];
        }
        tile.dw[b * 8 + i] = Half(p);
        tile.dmin[b * 8 + i] = Half(p + 2);
      }
      __m512i out[4];
      Interleave8(code, out);
      for (int v = 0; v < 4; ++v) _mm512_storeu_si512(codes + 256 * b + 64 * v, out[v]);
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
    __m512i xv[4];
    for (int v = 0; v < 4; ++v) xv[v] = _mm512_loadu_si512(x + 256 * b + 64 * v);
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums + 16 * b));
    __m256i isum[kTileRows], msum[kTileRows];
    for (int64_t i = 0; i < kTileRows; ++i) {
      const uint8_t* wc = tile.codes + (i * nb_row + b) * 256;
      const KTileBlock& m = tile.meta[i * nb_row + b];
      const __m256i sc_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.sc_lo));
      const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.s16));
      // The weights are the unsigned operand here.
      __m512i z0 = _mm512_setzero_si512();
      if constexpr (F == WeightFormat::kQ6_K) {
        // Tiled vectors 0, 1 hold elements 0..15 of every sub-block, 2, 3 elements 16..31.
        __m512i z1 = _mm512_setzero_si512();
        for (int v = 0; v < 2; ++v) {
          z0 = _mm512_dpbusd_epi32(z0, _mm512_loadu_si512(wc + 64 * v), xv[v]);
          z1 = _mm512_dpbusd_epi32(z1, _mm512_loadu_si512(wc + 64 * (v + 2)), xv[v + 2]);
        }
        const __m256i sc_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(m.sc_hi));
        const __m256i dot = _mm256_add_epi32(_mm256_mullo_epi32(Fold(z0), sc_lo),
                                             _mm256_mullo_epi32(Fold(z1), sc_hi));
        const __m256i bias = _mm256_madd_epi16(s16, bs);
        isum[i] = _mm256_sub_epi32(dot, _mm256_slli_epi32(bias, 5));  // dot - 32 bias.
      } else {
        for (int v = 0; v < 4; ++v) {
          z0 = _mm512_dpbusd_epi32(z0, _mm512_loadu_si512(wc + 64 * v), xv[v]);
        }
        isum[i] = _mm256_mullo_epi32(Fold(z0), sc_lo);
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
  const __mmask8 keep_all = 0xFF;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kTileRows) {
    const int64_t nr = std::min(kTileRows, row_end - r0);
    for (int64_t i = 0; i < kTileRows; ++i) DecodeRowK<F>(w, i < nr ? r0 + i : -1, i, tile);
    const __mmask8 keep = nr == kTileRows ? keep_all : static_cast<__mmask8>((1u << nr) - 1);
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
        _mm256_mask_storeu_ps(y + (t0 + t) * w.rows + r0, keep, acc_buf[t]);
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
