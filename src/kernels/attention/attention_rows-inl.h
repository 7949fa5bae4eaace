// Per-target row decoders of the SIMD item kernel (attention_hwy.cc includes this once per
// Highway target through foreach_target.h; not a public header).
//
// A row decoder reads one K or V row of a KV dtype and yields its decoded elements a few vectors
// at a time: LoadRowVectors(row, i, out) writes RowVectors<Row>() vectors, the elements
// [i, i + RowVectors * Lanes) in the row's element order (Int4Row's differs; see there). The
// decoded values are bit-identical to the codecs' (DecodeRow, codec.h), except that rows with a
// per-row scale (kHasScale: fp8, int8) load their elements unscaled: the score step multiplies
// each position's dot product by its row's `scale`, and the value step folds it into the
// position's softmax weight, instead of one multiply per element (for fp8 that was an eighth of
// the decode's instructions per element, shared by only 4 heads' multiply-adds).

#if defined(KVENGINE_ATTENTION_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_ATTENTION_ROWS_INL_H_
#undef KVENGINE_ATTENTION_ROWS_INL_H_
#else
#define KVENGINE_ATTENTION_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "quant/codec_params.h"
#include "quant/codec_simd-inl.h"
#include "quant/half.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {

struct F32Row {
  static constexpr bool kHasScale = false;
  const uint8_t* p;
  static F32Row Make(const uint8_t* data, const uint8_t*) { return {data}; }
  VF Load(size_t i) const { return LoadBytes(DF(), p + 4 * i); }
};

struct F16Row {
  static constexpr bool kHasScale = false;
  const uint8_t* p;
  static F16Row Make(const uint8_t* data, const uint8_t*) { return {data}; }
  VF Load(size_t i) const { return DecodeF16(p + 2 * i); }
};

struct Bf16Row {
  static constexpr bool kHasScale = false;
  const uint8_t* p;
  static Bf16Row Make(const uint8_t* data, const uint8_t*) { return {data}; }
  VF Load(size_t i) const { return DecodeBf16(p + 2 * i); }
};

// A row's f16 scale as float: vcvtph2ps where the target has F16C (the same bits as F16ToF32 for
// every input, half.h), else the scalar conversion (an out-of-line call per row: on AVX2 that was
// a few percent of int8 attention). Highway's AVX2 and AVX3 targets include <immintrin.h>.
inline float RowScale(const uint8_t* scale) {
#if KVENGINE_QUANT_HAVE_F16C
  return _cvtsh_ss(quant_internal::LoadU16(scale));
#else
  return F16ToF32(quant_internal::LoadU16(scale));
#endif
}

template <bool kE4M3>
struct Fp8Row {
  static constexpr bool kHasScale = true;
#if HWY_TARGET == HWY_AVX2
  // Two vectors per load: DecodeFp8UnscaledPair's 256-bit integer steps (codec_simd-inl.h).
  static constexpr int kVectors = 2;
#endif
  const uint8_t* p;
  float scale;  // The row's scale times kFp8DecodeFactor (codec_simd-inl.h).
  static Fp8Row Make(const uint8_t* data, const uint8_t* s) {
    return {data, RowScale(s) * kFp8DecodeFactor<kE4M3>};
  }
  VF Load(size_t i) const { return DecodeFp8Unscaled<kE4M3>(p + i); }
#if HWY_TARGET == HWY_AVX2
  // Elements [i, i + 2 * Lanes) in row order.
  void LoadN(size_t i, VF* out) const { DecodeFp8UnscaledPair<kE4M3>(p + i, out); }
#endif
};

struct Int8Row {
  static constexpr bool kHasScale = true;
  const uint8_t* p;
  float scale;
  static Int8Row Make(const uint8_t* data, const uint8_t* s) { return {data, RowScale(s)}; }
  VF Load(size_t i) const {
    const hn::Rebind<int8_t, DF> d8;
    return hn::ConvertTo(
        DF(), hn::PromoteTo(DI32(), hn::LoadU(d8, reinterpret_cast<const int8_t*>(p + i))));
  }
};

// int4 rows decoded in registers, for groups of 32 elements (Int4GroupSize(d) == 32: d a
// multiple of 32; other head dims decode int4 into the kernel's f32 tile first). LoadN decodes
// a block of 2 x Lanes elements, Lanes bytes of codes: the bytes zero-extended to one lane each
// give the low nibbles, the block's even elements, and the same shifted right by 4 give the high
// nibbles, its odd elements. So out[0] holds the block's even elements and out[1] its odd ones:
// the kernel permutes q the same way for scores and un-permutes the value accumulators
// (Int4RowElement). A group (32 elements) is a whole number of blocks.
//
// Each value is min + code * scale, bit-identical to the codecs' multiply-then-add: code * scale
// is exact (at most 4 + 11 significant bits), so a fused multiply-add rounds the same way.
//   * AVX-512: per block the row's 16 possible values (min + k * scale, k = 0..15) form one
//     vector, and vpermps looks each code up in it (it reads only the low 4 bits of each index
//     lane, so the unshifted bytes need no mask): one FMA and two permutes per 32 elements.
//   * Other targets: codes masked, converted to float, one multiply-add per vector.
//
// `params` points at the row's group parameters decoded to f32, [group][scale, min] (decoded
// once per chunk by the kernel, DecodeF16Params), not at the stored f16 bytes.
struct Int4Row {
  static constexpr bool kHasScale = false;
  static constexpr int kVectors = 2;
  const uint8_t* p;
  const float* params;
  static Int4Row Make(const uint8_t* data, const uint8_t* params) {
    return {data, reinterpret_cast<const float*>(params)};
  }
  // Block [i, i + 2 * Lanes) of the row (i a multiple of 2 * Lanes).
  void LoadN(size_t i, VF* out) const {
    const float* gp = params + 2 * (i / 32);
#if HWY_TARGET == HWY_AVX3
    const __m512 iota = _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f,
                                       10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f);
    const __m512 values = _mm512_fmadd_ps(iota, _mm512_set1_ps(gp[0]), _mm512_set1_ps(gp[1]));
    const __m512i bytes =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i / 2)));
    out[0] = VF{_mm512_permutexvar_ps(bytes, values)};
    out[1] = VF{_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), values)};
#else
    const DF df;
    const VU32 bytes = LoadU8AsU32(p + i / 2);
    const VF scale = hn::Set(df, gp[0]), min = hn::Set(df, gp[1]);
    const VU32 low = hn::And(bytes, hn::Set(DU32(), 15u));
    out[0] = hn::MulAdd(hn::ConvertTo(df, hn::BitCast(DI32(), low)), scale, min);
    out[1] =
        hn::MulAdd(hn::ConvertTo(df, hn::BitCast(DI32(), hn::ShiftRight<4>(bytes))), scale, min);
#endif
  }
};

// Int4Row's order: index i of a run of vector pairs holds row element Int4RowElement(i, Lanes).
inline size_t Int4RowElement(size_t i, size_t lanes) {
  const size_t block = 2 * lanes, base = i / block * block, r = i % block;
  return base + (r < lanes ? 2 * r : 2 * (r - lanes) + 1);
}

// halves f16 values (bytes src) -> out[0, halves) as f32; out has room for a whole multiple of
// 16 floats.
inline void DecodeF16Params(const uint8_t* src, size_t halves, float* out) {
#if HWY_TARGET == HWY_AVX3
  for (size_t i = 0; i < halves; i += 16) {  // The last vector stores zeros past `halves`.
    const size_t n = halves - i < 16 ? halves - i : 16;
    const __mmask16 mask = __mmask16((1u << n) - 1);
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, src + 2 * i)));
  }
#else
  for (size_t i = 0; i < halves; ++i) out[i] = RowScale(src + 2 * i);
#endif
}

// Vectors per LoadRowVectors call: Row::kVectors where the row defines it, else 1.
template <class Row>
constexpr int RowVectors() {
  if constexpr (requires { Row::kVectors; }) {
    return Row::kVectors;
  } else {
    return 1;
  }
}

template <class Row>
HWY_INLINE void LoadRowVectors(const Row& r, size_t i, VF* out) {
  if constexpr (RowVectors<Row>() == 1) {
    out[0] = r.Load(i);
  } else {
    r.LoadN(i, out);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
