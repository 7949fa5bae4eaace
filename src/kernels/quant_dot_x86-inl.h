// x86 kernels of the quantized dot products (quant_dot.h), included by quant_dot_x86.cc once per
// instruction set with KV_QD_NS (namespace), KV_QD_TARGET (a target attribute string) and
// KV_QD_VNNI (1: AVX-512 VNNI dpbusd / dpwssd; 0: AVX2 maddubs + madd) defined. Not a header.
//
// Integer products: u8 x s8 pairs summed into int32 lanes. Bounds keep every step exact on both
// paths: weight codes are at most 63 unsigned, or |code| <= 128 signed (Q8_0: handled as |w| and
// sign(x, w); Q4_0 / Q5_0 as their stored codes <= 31 minus an offset, OffsetDot); activation
// codes lie in [-127, 127]; so a pair sum is at most 2 * 128 * 127 < 2^15 and maddubs never
// saturates. The float steps follow quant_dot.h's definition exactly.

namespace KV_QD_NS {

#define KV_QD_FN __attribute__((target(KV_QD_TARGET), always_inline)) inline

// Lane k (k < 8): sum over bytes 4k .. 4k + 3 of a[i] (unsigned) * b[i] (signed).
KV_QD_FN __m256i DotU8S8(__m256i a, __m256i b) {
#if KV_QD_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
#endif
}

// acc + the int16 pairs p times the int16 scales s, summed per int32 lane.
KV_QD_FN __m256i AddScaled16(__m256i acc, __m256i p, __m256i s) {
#if KV_QD_VNNI
  return _mm256_dpwssd_epi32(acc, p, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
#endif
}

KV_QD_FN int32_t HorizontalSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// A K-quant super-block against one q8_K block: int32 lanes whose total is the sum over the 8
// groups of 32 of (code[g] . x->qs[32 g ..]) times each 16-element half's int16 scale in
// scale[g]; exact.
KV_QD_FN __m256i ScaledGroupLanes(const __m256i* code, const __m256i* scale, const Q8KBlock* x) {
  __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // Two chains.
  for (int g = 0; g < 8; ++g) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->qs + 32 * g));
    isum[g & 1] = AddScaled16(isum[g & 1], _mm256_maddubs_epi16(code[g], q), scale[g]);
  }
  return _mm256_add_epi32(isum[0], isum[1]);
}

// The totals of a's and b's int32 lanes, converted to float, in lanes 0 and 1 (one reduction for
// both; the same values as two HorizontalSums and two conversions).
KV_QD_FN __m128 TwoTotals(__m256i a, __m256i b) {
  const __m256i h = _mm256_hadd_epi32(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  return _mm_cvtepi32_ps(_mm_hadd_epi32(q, q));
}

KV_QD_FN uint16_t LoadU16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return h;
}

KV_QD_FN float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// 16 bytes of nibbles -> 32 codes in element order (low nibbles, then high nibbles).
// The bytes go to both halves in one load and the high half is shifted by 4 (two operations;
// halves built separately and inserted took five).
KV_QD_FN __m256i Nibbles32(const uint8_t* qs) {
  const __m256i b =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4)),
                          _mm256_set1_epi8(15));
}

// Byte j = 0x10 when bit j of qh is set, else 0 (j < 32).
KV_QD_FN __m256i FifthBits(const uint8_t* p) {
  uint32_t qh;
  std::memcpy(&qh, p, sizeof(qh));
  const __m256i idx = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101,
                                        0x0000000000000000);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(qh)), idx);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// The offset that Q4_0's and Q5_0's stored codes carry (code = stored - offset); 0 for the
// others.
template <WeightFormat F>
inline constexpr int kCodeOffset = F == WeightFormat::kQ4_0 ? 8
                                                            : (F == WeightFormat::kQ5_0 ? 16 : 0);

// Block j's 32 codes in element order: signed (Q8_0, Q4_0, Q5_0) or unsigned (Q4_1, Q5_1).
// kStored: Q4_0's and Q5_0's as stored (code + kCodeOffset, unsigned).
template <WeightFormat F, bool kStored = false>
KV_QD_FN __m256i Codes32(const uint8_t* p) {
  if constexpr (F == WeightFormat::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  } else if constexpr (F == WeightFormat::kQ4_0) {
    const __m256i c = Nibbles32(p + 2);
    return kStored ? c : _mm256_sub_epi8(c, _mm256_set1_epi8(8));
  } else if constexpr (F == WeightFormat::kQ5_0) {
    const __m256i c = _mm256_or_si256(Nibbles32(p + 6), FifthBits(p + 2));
    return kStored ? c : _mm256_sub_epi8(c, _mm256_set1_epi8(16));
  } else if constexpr (F == WeightFormat::kQ4_1) {
    return Nibbles32(p + 4);
  } else {
    static_assert(F == WeightFormat::kQ5_1);
    return _mm256_or_si256(Nibbles32(p + 8), FifthBits(p + 4));
  }
}

// Lane k (k < 8): sum over bytes 4k .. 4k + 3 of (u[i] - kOffset) * y[i], for stored codes
// u <= 31 (so the products need no sign trick: u . y - kOffset * sum(y)).
template <int kOffset>
KV_QD_FN __m256i OffsetDot(__m256i u, __m256i y) {
  const __m256i off = _mm256_set1_epi8(kOffset);
#if KV_QD_VNNI
  return _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y),
                          _mm256_dpbusd_epi32(_mm256_setzero_si256(), off, y));
#else
  // Both pair sums and their difference fit int16 (2 * 31 * 127 + 2 * 16 * 127 < 2^15).
  return _mm256_madd_epi16(
      _mm256_sub_epi16(_mm256_maddubs_epi16(u, y), _mm256_maddubs_epi16(off, y)),
      _mm256_set1_epi16(1));
#endif
}

// Lane k = total of v[k]'s lanes.
KV_QD_FN __m256i Transpose8Sums(const __m256i* v) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), quant_dot.h's final sum.
KV_QD_FN float ReduceLanes(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K / Q5_K super-block from its 12
// packed bytes (KQuantScaleMin for every sub-block at once), reading 16 bytes at packed (4 of
// the codes after them, unused). In a vector register: built by 32-bit scalar stores and read
// back as one 16-byte vector, each super-block's scales waited on a failed store-to-load forward.
KV_QD_FN __m128i UnpackScaleMin(const uint8_t* packed) {
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));  // w0 w1 w2 -
  // Lanes 0 and 2 take w0, w1 & 0x3F; lanes 1 and 3 take w2 & 0x0F and (w2 >> 4) & 0x0F, ored
  // with the top 2 bits of w0, w1's bytes moved to bits 4..5.
  const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(2, 1, 2, 0)),
                                     _mm_setr_epi32(0, 0, 0, 4));  // w0, w2, w1, w2 >> 4
  const __m128i top =
      _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                    _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(
      _mm_and_si128(low, _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F)), top);
}

// The f16 at p + offset of `count` (<= 8) consecutive blocks kStride bytes apart, as floats in
// lanes 0 .. count - 1 (0 above): the same bits as Half() of each.
template <size_t kStride>
KV_QD_FN __m256 Halves(const uint8_t* p, size_t offset, int64_t count) {
  alignas(16) uint16_t h[8] = {};
  if (count == 8) {
    __m128i v = _mm_setzero_si128();
#define KV_QD_INSERT(k) v = _mm_insert_epi16(v, LoadU16(p + (k)*kStride + offset), k)
    KV_QD_INSERT(0);
    KV_QD_INSERT(1);
    KV_QD_INSERT(2);
    KV_QD_INSERT(3);
    KV_QD_INSERT(4);
    KV_QD_INSERT(5);
    KV_QD_INSERT(6);
    KV_QD_INSERT(7);
#undef KV_QD_INSERT
    return _mm256_cvtph_ps(v);
  }
  for (int64_t k = 0; k < count; ++k) std::memcpy(&h[k], p + k * kStride + offset, 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// Tokens are taken kTokenChunk at a time; each group of 8 weight blocks (or each super-block) is
// decoded once per chunk and multiplied with every token of it. Per token the operations are
// those of quant_dot.h in its order, so the chunking never changes a bit.
constexpr int64_t kTokenChunk = 8;

// Whether a 32-element format's codes are signed (Q8_0, Q4_0, Q5_0: no min term) or unsigned
// with a per-block min (Q4_1, Q5_1).
template <WeightFormat F>
inline constexpr bool kSignedCodes =
    F == WeightFormat::kQ8_0 || F == WeightFormat::kQ4_0 || F == WeightFormat::kQ5_0;

// One token (decode) over a column range of whole groups of 8 blocks: the operations of
// Dot32Range below, in its order, with every loop bound a constant so the codes, products and
// the accumulator stay in registers (Dot32's runtime block and token counts put them on the
// stack: Q8_0 18 -> 23.6 GB/s per thread). chunk: the range's first block; q, dx, sx: the
// token's codes, scales and sums at that block; nb: the range's blocks, a multiple of 8.
template <WeightFormat F, size_t kBlockBytes>
KV_QD_FN __m256 Dot32OneWholeGroups(const uint8_t* chunk, int64_t nb, const int8_t* q,
                                    const float* dx, const float* sx, __m256 acc) {
  constexpr bool kSigned = kSignedCodes<F>;
  constexpr bool kHasMin = !kSigned;
  for (int64_t g = 0; g + 8 <= nb; g += 8) {
    const uint8_t* p0 = chunk + static_cast<size_t>(g) * kBlockBytes;
    __m256i v[8];
    for (int k = 0; k < 8; ++k) {
      const uint8_t* p = p0 + static_cast<size_t>(k) * kBlockBytes;
      const __m256i yk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * (g + k)));
      if constexpr (kCodeOffset<F> != 0) {
        v[k] = OffsetDot<kCodeOffset<F>>(Codes32<F, /*kStored=*/true>(p), yk);
      } else if constexpr (kSigned) {
        const __m256i c = Codes32<F>(p);
        v[k] = DotU8S8(_mm256_sign_epi8(c, c), _mm256_sign_epi8(yk, c));
      } else {
        v[k] = DotU8S8(Codes32<F>(p), yk);
      }
    }
    const __m256 dw = Halves<kBlockBytes>(p0, 0, 8);
    const __m256 isum = _mm256_cvtepi32_ps(Transpose8Sums(v));
    __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_loadu_ps(dx + g)), isum);
    if constexpr (kHasMin) {
      const __m256 mw = Halves<kBlockBytes>(p0, 2, 8);
      term = _mm256_add_ps(term, _mm256_mul_ps(mw, _mm256_loadu_ps(sx + g)));
    }
    acc = _mm256_add_ps(acc, term);
  }
  return acc;
}

// The blocks [c0 / 32, (c0 + width) / 32) of a row (chunk at the first) for every token, into
// state[t]'s eight lanes (quant_dot.h, "Column ranges"; c0 is a multiple of 8 blocks, so the
// range's group k is the row's group c0 / 256 + k, lane for lane).
template <WeightFormat F, size_t kBlockBytes>
KV_QD_FN void Dot32Range(const uint8_t* chunk, int64_t c0, int64_t width, int64_t cols,
                         const uint8_t* xq, size_t xq_stride, int64_t n_tokens,
                         QuantDotState* state) {
  constexpr bool kSigned = kSignedCodes<F>;
  constexpr bool kHasMin = !kSigned;
  const int64_t nb_row = cols / 32;
  const int64_t b0 = c0 / 32;
  const int64_t nb = width / 32;
  // Token t's codes, scales and sums at the range's first block.
  const auto codes = [&](int64_t t) {
    return reinterpret_cast<const int8_t*>(xq + static_cast<size_t>(t) * xq_stride) + c0;
  };
  const auto scales = [&](int64_t t) {
    return reinterpret_cast<const float*>(xq + static_cast<size_t>(t) * xq_stride + cols) + b0;
  };
  if (n_tokens == 1 && nb % 8 == 0) {
    const __m256 acc = Dot32OneWholeGroups<F, kBlockBytes>(
        chunk, nb, codes(0), scales(0), scales(0) + nb_row, _mm256_loadu_ps(state[0].lane));
    _mm256_storeu_ps(state[0].lane, acc);
    return;
  }
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
    const int64_t nt = std::min(kTokenChunk, n_tokens - t0);
    __m256 acc[kTokenChunk];
    for (int64_t t = 0; t < nt; ++t) acc[t] = _mm256_loadu_ps(state[t0 + t].lane);
    for (int64_t g = 0; g < nb; g += 8) {
      const int64_t count = std::min<int64_t>(8, nb - g);
      __m256i w[8];   // Unsigned operand: |code| (signed formats) or the code.
      __m256i sg[8];  // Signed formats: the codes, whose signs go onto the activations.
      const uint8_t* p0 = chunk + static_cast<size_t>(g) * kBlockBytes;
      for (int64_t k = 0; k < count; ++k) {
        const __m256i c = Codes32<F>(p0 + static_cast<size_t>(k) * kBlockBytes);
        if constexpr (kSigned) {
          w[k] = _mm256_sign_epi8(c, c);
          sg[k] = c;
        } else {
          w[k] = c;
        }
      }
      const __m256 dw = Halves<kBlockBytes>(p0, 0, count);
      const __m256 mw = kHasMin ? Halves<kBlockBytes>(p0, 2, count) : _mm256_setzero_ps();
      for (int64_t t = 0; t < nt; ++t) {
        const int8_t* q = codes(t0 + t) + 32 * g;
        const float* dx = scales(t0 + t) + g;
        const float* sx = dx + nb_row;
        __m256i v[8];
        for (int64_t k = 0; k < count; ++k) {
          __m256i yk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * k));
          if constexpr (kSigned) yk = _mm256_sign_epi8(yk, sg[k]);
          v[k] = DotU8S8(w[k], yk);
        }
        for (int64_t k = count; k < 8; ++k) v[k] = _mm256_setzero_si256();
        __m256 sxv, ssum;
        if (count == 8) {
          sxv = _mm256_loadu_ps(dx);
          if constexpr (kHasMin) ssum = _mm256_loadu_ps(sx);
        } else {  // Blocks past the end: scale 0, so their terms are +0 (quant_dot.h).
          alignas(32) float part[8] = {}, part_s[8] = {};
          std::memcpy(part, dx, static_cast<size_t>(count) * sizeof(float));
          if constexpr (kHasMin) {
            std::memcpy(part_s, sx, static_cast<size_t>(count) * sizeof(float));
          }
          sxv = _mm256_load_ps(part);
          ssum = _mm256_load_ps(part_s);
        }
        const __m256 isum = _mm256_cvtepi32_ps(Transpose8Sums(v));
        __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, sxv), isum);
        if constexpr (kHasMin) term = _mm256_add_ps(term, _mm256_mul_ps(mw, ssum));
        acc[t] = _mm256_add_ps(acc[t], term);
      }
    }
    for (int64_t t = 0; t < nt; ++t) _mm256_storeu_ps(state[t0 + t].lane, acc[t]);
  }
}

// Per byte j: bits kBit .. kBit + kCount - 1 of byte j of v moved to bit 4 and up, the other
// bits 0. One shift of 16-bit lanes moves both bytes' bits (those it brings across from the
// other byte land outside the mask).
template <int kBit, int kCount = 1>
KV_QD_FN __m256i BitsToFour(__m256i v) {
  const __m256i mask = _mm256_set1_epi8(static_cast<char>(((1 << kCount) - 1) << 4));
  if constexpr (kBit < 4) return _mm256_and_si256(_mm256_slli_epi16(v, 4 - kBit), mask);
  if constexpr (kBit == 4) return _mm256_and_si256(v, mask);
  return _mm256_and_si256(_mm256_srli_epi16(v, kBit - 4), mask);
}

// A Q4_K (kQ5 false) or Q5_K super-block's codes: code[s] = sub-block s's 32 codes (elements
// 32 s ..), in element order.
template <bool kQ5>
KV_QD_FN void Q45KCodes(const uint8_t* p, __m256i* code) {
  const __m256i m4 = _mm256_set1_epi8(15);
  const uint8_t* qs = p + (kQ5 ? 48 : 16);
  for (int i = 0; i < 4; ++i) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i));
    code[2 * i] = _mm256_and_si256(bytes, m4);
    code[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
  }
  if constexpr (kQ5) {
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    code[0] = _mm256_or_si256(code[0], BitsToFour<0>(qh));
    code[1] = _mm256_or_si256(code[1], BitsToFour<1>(qh));
    code[2] = _mm256_or_si256(code[2], BitsToFour<2>(qh));
    code[3] = _mm256_or_si256(code[3], BitsToFour<3>(qh));
    code[4] = _mm256_or_si256(code[4], BitsToFour<4>(qh));
    code[5] = _mm256_or_si256(code[5], BitsToFour<5>(qh));
    code[6] = _mm256_or_si256(code[6], BitsToFour<6>(qh));
    code[7] = _mm256_or_si256(code[7], BitsToFour<7>(qh));
  }
}

// A Q6_K super-block's unsigned 6-bit codes: code[g] = elements 32 g .. 32 g + 31, in order.
KV_QD_FN void Q6KCodes(const uint8_t* p, __m256i* code) {
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
    const __m256i nib[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                            _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
    // (qh >> 2k) & 3 per byte, << 4.
    code[4 * h + 0] = _mm256_or_si256(nib[0], BitsToFour<0, 2>(qh));
    code[4 * h + 1] = _mm256_or_si256(nib[1], BitsToFour<2, 2>(qh));
    code[4 * h + 2] = _mm256_or_si256(nib[2], BitsToFour<4, 2>(qh));
    code[4 * h + 3] = _mm256_or_si256(nib[3], BitsToFour<6, 2>(qh));
  }
}

// Word kWl of v's low 128-bit half in every int16 lane of the low half, word kWh of its high
// half in every lane of the high half (vpshufb picks within each half).
template <int kWl, int kWh>
KV_QD_FN __m256i PickWords(__m256i v) {
  const auto b = [](int w) { return static_cast<char>(2 * w); };
  const auto c = [](int w) { return static_cast<char>(2 * w + 1); };
  return _mm256_shuffle_epi8(
      v, _mm256_setr_epi8(b(kWl), c(kWl), b(kWl), c(kWl), b(kWl), c(kWl), b(kWl), c(kWl), b(kWl),
                          c(kWl), b(kWl), c(kWl), b(kWl), c(kWl), b(kWl), c(kWl), b(kWh), c(kWh),
                          b(kWh), c(kWh), b(kWh), c(kWh), b(kWh), c(kWh), b(kWh), c(kWh), b(kWh),
                          c(kWh), b(kWh), c(kWh), b(kWh), c(kWh)));
}

// scale[g] (g < 8) from 8-word vectors broadcast to both 128-bit halves: with kPairs, words
// 2 g and 2 g + 1 of the 16 in a (words 0..7) and b (words 8..15) in the low and high half
// (Q6_K's two scales per sub-block of 32); else word g of a in both.
template <bool kPairs, int kG = 0>
KV_QD_FN void ScaleVectors(__m256i a, __m256i b, __m256i* scale) {
  if constexpr (kG < 8) {
    if constexpr (kPairs) {
      scale[kG] = PickWords<(2 * kG) % 8, (2 * kG + 1) % 8>(kG < 4 ? a : b);
    } else {
      scale[kG] = PickWords<kG, kG>(a);
    }
    ScaleVectors<kPairs, kG + 1>(a, b, scale);
  }
}

// A Q4_K (kQ5 false) or Q5_K super-block, decoded once for its dot products with q8_K blocks.
struct Q45KDecoded {
  __m256i code[8];   // Sub-block s's 32 codes (Q45KCodes).
  __m256i scale[8];  // Sub-block s's scale in every int16 lane.
  __m256i mins16;    // mn[s] in int16 lanes 2 s and 2 s + 1, against the 16 bsums.
  float dw, dmin;
};

template <bool kQ5>
KV_QD_FN void DecodeQ45K(const uint8_t* p, Q45KDecoded* out) {
  const __m128i bytes = UnpackScaleMin(p + 4);  // Scales of sub-blocks 0..7, their mins.
  const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(bytes));
  ScaleVectors<false>(sc16, sc16, out->scale);
  out->mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(bytes, bytes));
  Q45KCodes<kQ5>(p, out->code);
  out->dw = Half(p);
  out->dmin = Half(p + 2);
}

// acc after block k of the row against q8_K block x (quant_dot.h's K-quant step).
KV_QD_FN float StepQ45K(const Q45KDecoded& k, const Q8KBlock* x, float acc) {
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->bsums));
  const __m128 sums = TwoTotals(ScaledGroupLanes(k.code, k.scale, x),
                                _mm256_madd_epi16(k.mins16, bsums));  // dot, msum
  return (acc + (k.dw * x->d) * _mm_cvtss_f32(sums)) -
         (k.dmin * x->d) * _mm_cvtss_f32(_mm_movehdup_ps(sums));
}

// A Q6_K super-block, decoded once.
struct Q6KDecoded {
  __m256i code[8];   // Elements 32 g .. 32 g + 31 (0 .. 63), Q6KCodes.
  __m256i scale[8];  // Their two sub-block scales: scales[2 g] low half, scales[2 g + 1] high.
  __m256i scales16;  // The 16 scales as int16, against the 16 bsums.
  float dw;
};

KV_QD_FN void DecodeQ6K(const uint8_t* p, Q6KDecoded* out) {
  Q6KCodes(p, out->code);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192));
  out->scales16 = _mm256_cvtepi8_epi16(bytes);
  ScaleVectors<true>(_mm256_broadcastsi128_si256(_mm256_castsi256_si128(out->scales16)),
                     _mm256_broadcastsi128_si256(_mm256_extracti128_si256(out->scales16, 1)),
                     out->scale);
  out->dw = Half(p + 208);
}

KV_QD_FN float StepQ6K(const Q6KDecoded& k, const Q8KBlock* x, float acc) {
  const __m256i bias =
      _mm256_madd_epi16(k.scales16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->bsums)));
  // dot - 32 bias, lane by lane before the one horizontal sum (exact integers either way).
  const int32_t sum = HorizontalSum(
      _mm256_sub_epi32(ScaledGroupLanes(k.code, k.scale, x), _mm256_slli_epi32(bias, 5)));
  return acc + (k.dw * x->d) * static_cast<float>(sum);
}

// Super-blocks [c0 / 256, (c0 + width) / 256) of a row (chunk at the first) for every token,
// carried in state[t].lane[0]; each super-block decoded once per kTokenChunk tokens.
template <class Decoded, auto kDecode, auto kStep, size_t kBytes>
KV_QD_FN void DotKRange(const uint8_t* chunk, int64_t c0, int64_t width, const uint8_t* xq,
                        size_t xq_stride, int64_t n_tokens, QuantDotState* state) {
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
    const int64_t nt = std::min(kTokenChunk, n_tokens - t0);
    float acc[kTokenChunk];
    for (int64_t t = 0; t < nt; ++t) acc[t] = state[t0 + t].lane[0];
    for (int64_t b = c0 / 256; b < (c0 + width) / 256; ++b) {
      Decoded k;
      kDecode(chunk + static_cast<size_t>(b - c0 / 256) * kBytes, &k);
      for (int64_t t = 0; t < nt; ++t) {
        const auto* x =
            reinterpret_cast<const Q8KBlock*>(xq + static_cast<size_t>(t0 + t) * xq_stride +
                                              static_cast<size_t>(b) * sizeof(Q8KBlock));
        acc[t] = kStep(k, x, acc[t]);
      }
    }
    for (int64_t t = 0; t < nt; ++t) state[t0 + t].lane[0] = acc[t];
  }
}

// One token over a whole row of nb super-blocks: DotKRange's operations in its order, with the
// accumulator in a register (through state[t] on the stack, each super-block's float steps
// waited on a store and a load of the one before: llama-1b Q4_K decode, measured in
// docs/notes/decode-matmul.md).
template <class Decoded, auto kDecode, auto kStep, size_t kBytes>
KV_QD_FN float DotKOne(const uint8_t* row, int64_t nb, const Q8KBlock* x) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    Decoded k;
    kDecode(row + static_cast<size_t>(b) * kBytes, &k);
    acc = kStep(k, x + b, acc);
  }
  return acc;
}

// Calls f.template operator()<Decoded, kDecode, kStep, kBytes>() for a K-quant format and returns
// true; false for any other format.
template <class Fn>
KV_QD_FN bool WithFormatK(WeightFormat format, const Fn& f) {
  switch (format) {
    case WeightFormat::kQ4_K:
      f.template operator()<Q45KDecoded, &DecodeQ45K<false>, &StepQ45K, kQ4_KBlockBytes>();
      return true;
    case WeightFormat::kQ5_K:
      f.template operator()<Q45KDecoded, &DecodeQ45K<true>, &StepQ45K, kQ5_KBlockBytes>();
      return true;
    case WeightFormat::kQ6_K:
      f.template operator()<Q6KDecoded, &DecodeQ6K, &StepQ6K, kQ6_KBlockBytes>();
      return true;
    default:
      return false;
  }
}

// Calls f.template operator()<F, kBlockBytes>() for a 32-element format and returns true; false
// for any other format.
template <class Fn>
KV_QD_FN bool WithFormat32(WeightFormat format, const Fn& f) {
  switch (format) {
    case WeightFormat::kQ8_0:
      f.template operator()<WeightFormat::kQ8_0, kQ8_0BlockBytes>();
      return true;
    case WeightFormat::kQ4_0:
      f.template operator()<WeightFormat::kQ4_0, kQ4_0BlockBytes>();
      return true;
    case WeightFormat::kQ4_1:
      f.template operator()<WeightFormat::kQ4_1, kQ4_1BlockBytes>();
      return true;
    case WeightFormat::kQ5_0:
      f.template operator()<WeightFormat::kQ5_0, kQ5_0BlockBytes>();
      return true;
    case WeightFormat::kQ5_1:
      f.template operator()<WeightFormat::kQ5_1, kQ5_1BlockBytes>();
      return true;
    default:
      return false;
  }
}

__attribute__((target(KV_QD_TARGET))) void QuantDotRange(WeightFormat format, const uint8_t* chunk,
                                                         int64_t c0, int64_t width, int64_t cols,
                                                         const uint8_t* xq, size_t xq_stride,
                                                         int64_t n_tokens, QuantDotState* state) {
  const bool done = WithFormat32(
      format, [&]<WeightFormat F, size_t kBlockBytes>() __attribute__((target(KV_QD_TARGET))) {
        Dot32Range<F, kBlockBytes>(chunk, c0, width, cols, xq, xq_stride, n_tokens, state);
      });
  if (done) return;
  const bool done_k = WithFormatK(
      format, [&]<class Decoded, auto kDecode, auto kStep, size_t kBytes>()
                  __attribute__((target(KV_QD_TARGET))) {
                    DotKRange<Decoded, kDecode, kStep, kBytes>(chunk, c0, width, xq, xq_stride,
                                                               n_tokens, state);
                  });
  if (done_k) return;
  KV_CHECK(false) << "no quantized dot for a float format";
}

// The whole row: one token of whole groups of 32-element blocks (a decode step's rows) straight
// through the registers-only loop from a zero accumulator, reduced in registers (through a state
// in memory and a call to finish it, llama-1b's Q8_0 decode, 2048-column rows, ran 4-9% slower
// on the Zen 4 VM); else QuantDotRange over [0, cols) from zero states, kTokenChunk tokens at a
// time, finished as QuantDotFinish does.
__attribute__((target(KV_QD_TARGET))) void QuantDotTokens(WeightFormat format, const uint8_t* row,
                                                          int64_t cols, const uint8_t* xq,
                                                          size_t xq_stride, int64_t n_tokens,
                                                          float* y, int64_t y_stride) {
  if (n_tokens == 1 && (cols / 32) % 8 == 0) {
    const auto* dx = reinterpret_cast<const float*>(xq + cols);
    const bool done = WithFormat32(
        format, [&]<WeightFormat F, size_t kBlockBytes>() __attribute__((target(KV_QD_TARGET))) {
          y[0] = ReduceLanes(Dot32OneWholeGroups<F, kBlockBytes>(
              row, cols / 32, reinterpret_cast<const int8_t*>(xq), dx, dx + cols / 32,
              _mm256_setzero_ps()));
        });
    if (done) return;
  }
  if (n_tokens == 1 && cols % 256 == 0) {
    const bool done = WithFormatK(
        format, [&]<class Decoded, auto kDecode, auto kStep, size_t kBytes>()
                    __attribute__((target(KV_QD_TARGET))) {
                      y[0] = DotKOne<Decoded, kDecode, kStep, kBytes>(
                          row, cols / 256, reinterpret_cast<const Q8KBlock*>(xq));
                    });
    if (done) return;
  }
  const bool k_quant = format == WeightFormat::kQ4_K || format == WeightFormat::kQ5_K ||
                       format == WeightFormat::kQ6_K;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenChunk) {
    const int64_t nt = std::min(kTokenChunk, n_tokens - t0);
    QuantDotState state[kTokenChunk];
    QuantDotRange(format, row, 0, cols, cols, xq + static_cast<size_t>(t0) * xq_stride, xq_stride,
                  nt, state);
    for (int64_t t = 0; t < nt; ++t) {
      y[(t0 + t) * y_stride] =
          k_quant ? state[t].lane[0] : ReduceLanes(_mm256_loadu_ps(state[t].lane));
    }
  }
}

#undef KV_QD_FN

}  // namespace KV_QD_NS
