// Per-target SIMD building blocks of the row codecs (included once per Highway target by
// codec_hwy.cc through foreach_target.h; not a public header).
//
// Every conversion here must give exactly the bits of its scalar definition in half.h /
// codec_ref.cc for every input, including NaN, inf, subnormals and ties; codec_simd_test.cc checks
// that on every compiled target. Ways this is kept true:
//   * Rounding to an integer uses the 1.5 * 2^23 "magic add" (exact RNE for |v| <= 2^22) instead of
//     hn::Round, whose EMU128 emulation misrounds some values just below .5.
//   * f16 uses the F16C instructions (vcvtps2ph / vcvtph2ps, RNE) on AVX2 and better; elsewhere a
//     bit-exact integer emulation (Highway 1.0.3's emulated DemoteTo truncates instead).
//   * bf16 always uses the integer RNE below (Highway 1.0.3's DemoteTo truncates).
//   * NaN lanes are replaced before hn::Min / hn::Max, whose NaN behaviour differs per target.
//   * Decoding never multiplies subnormal floats, so a thread that enabled FTZ/DAZ still decodes
//     subnormal f16 / fp8 values right.

#if defined(KVENGINE_QUANT_CODEC_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_QUANT_CODEC_SIMD_INL_H_
#undef KVENGINE_QUANT_CODEC_SIMD_INL_H_
#else
#define KVENGINE_QUANT_CODEC_SIMD_INL_H_
#endif

#include <cstring>
#include <limits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU32 = hn::RebindToUnsigned<DF>;
using DI32 = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VU32 = hn::Vec<DU32>;
// Upper bound of Lanes(DF()), for tail buffers.
inline constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

#undef KVENGINE_QUANT_HAVE_F16C  // Defined once per target.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define KVENGINE_QUANT_HAVE_F16C 1
#else
#define KVENGINE_QUANT_HAVE_F16C 0
#endif

// A vector of D's lanes loaded from / stored to unaligned bytes, without forming misaligned T*.
// (Integer compares below use only <, > and ==: Highway 1.0.3 lacks >= for i32 on SSE4.)
template <class D>
hn::Vec<D> LoadBytes(D d, const uint8_t* p) {
#if HWY_TARGET == HWY_SCALAR  // One lane: no byte vector can hold it.
  hn::TFromD<D> lane;
  std::memcpy(&lane, p, sizeof(lane));
  return hn::Set(d, lane);
#else
  const hn::Repartition<uint8_t, D> d8;
  return hn::BitCast(d, hn::LoadU(d8, p));
#endif
}
template <class D>
void StoreBytes(D /* d */, hn::Vec<D> v, uint8_t* p) {
#if HWY_TARGET == HWY_SCALAR
  const hn::TFromD<D> lane = hn::GetLane(v);
  std::memcpy(p, &lane, sizeof(lane));
#else
  const hn::Repartition<uint8_t, D> d8;
  hn::StoreU(hn::BitCast(d8, v), d8, p);
#endif
}

// Round to nearest even; exact for |v| <= 2^22 (callers clamp first).
HWY_INLINE VF RoundSmall(VF v) {
  const VF magic = hn::Set(DF(), 0x1.8p23f);
  return hn::Sub(hn::Add(v, magic), magic);
}

// u32 lanes holding values < 2^16 (resp. 2^8) -> narrow lanes, stored as bytes.
HWY_INLINE void StoreU32AsU16(VU32 v, uint8_t* p) {
  const hn::Rebind<uint16_t, DF> du16;
  StoreBytes(du16, hn::DemoteTo(du16, hn::BitCast(DI32(), v)), p);
}
HWY_INLINE void StoreU32AsU8(VU32 v, uint8_t* p) {
  const hn::Rebind<uint8_t, DF> du8;
  hn::StoreU(hn::DemoteTo(du8, hn::BitCast(DI32(), v)), du8, p);
}
HWY_INLINE VU32 LoadU16AsU32(const uint8_t* p) {
  const hn::Rebind<uint16_t, DF> du16;
  return hn::PromoteTo(DU32(), LoadBytes(du16, p));
}
HWY_INLINE VU32 LoadU8AsU32(const uint8_t* p) {
  return hn::PromoteTo(DU32(), hn::LoadU(hn::Rebind<uint8_t, DF>(), p));
}

// ------------------------------ f16

HWY_INLINE void EncodeF16(VF v, uint8_t* p) {
#if KVENGINE_QUANT_HAVE_F16C
  const hn::Rebind<hwy::float16_t, DF> df16;
  StoreBytes(hn::RebindToUnsigned<decltype(df16)>(),
             hn::BitCast(hn::RebindToUnsigned<decltype(df16)>(), hn::DemoteTo(df16, v)), p);
#else
  const DU32 du;
  const DI32 di;
  const VU32 bits = hn::BitCast(du, v);
  const VU32 sign = hn::ShiftRight<16>(hn::And(bits, hn::Set(du, 0x80000000u)));
  const VU32 a = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto ai = hn::BitCast(di, a);
  // Normal: rebias the exponent (-112 << 23, wrapping) and round the 13 dropped bits to even; a
  // carry out of the mantissa bumps the exponent, up to 0x7C00 (inf).
  const VU32 odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1));
  const VU32 normal = hn::ShiftRight<13>(hn::Add(hn::Add(a, hn::Set(du, 0xC8000FFFu)), odd));
  // Subnormal (|v| < 2^-14): adding 0.5 rounds |v| to a multiple of 2^-24 in the mantissa.
  const VU32 sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(DF(), a), hn::Set(DF(), 0.5f))),
                           hn::Set(du, 0x3F000000u));
  VU32 h = hn::IfThenElse(hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 113 << 23))), sub, normal);
  h = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, (143 << 23) - 1))),
                     hn::Set(du, 0x7C00u), h);
  const VU32 nan = hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(a), hn::Set(du, 0x3FF)));
  h = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7F800000))), nan, h);
  StoreU32AsU16(hn::Or(h, sign), p);
#endif
}

HWY_INLINE VF DecodeF16(const uint8_t* p) {
#if KVENGINE_QUANT_HAVE_F16C
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(DF(),
                       hn::BitCast(df16, LoadBytes(hn::RebindToUnsigned<decltype(df16)>(), p)));
#else
  const DU32 du;
  const DI32 di;
  const VU32 h = LoadU16AsU32(p);
  const VU32 sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const VU32 a = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto ai = hn::BitCast(di, a);
  const VU32 normal = hn::Add(hn::ShiftLeft<13>(a), hn::Set(du, 112u << 23));
  const VU32 sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(DF(), ai), hn::Set(DF(), 0x1p-24f)));
  VU32 bits = hn::IfThenElse(hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 0x400))), sub, normal);
  // Exponent 31: inf, or NaN with the payload kept and the quiet bit set (as vcvtph2ps).
  const VU32 special =
      hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(hn::And(a, hn::Set(du, 0x3FF))));
  const VU32 quiet = hn::IfThenElseZero(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7C00))),
                                        hn::Set(du, 0x400000u));
  bits = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7BFF))), hn::Or(special, quiet),
                        bits);
  return hn::BitCast(DF(), hn::Or(bits, sign));
#endif
}

// ------------------------------ bf16

HWY_INLINE void EncodeBf16(VF v, uint8_t* p) {
  const DU32 du;
  const VU32 bits = hn::BitCast(du, v);
  const VU32 lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
  const VU32 rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), lsb));
  const VU32 nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
  StoreU32AsU16(hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded), p);
}

HWY_INLINE VF DecodeBf16(const uint8_t* p) {
  return hn::BitCast(DF(), hn::ShiftLeft<16>(LoadU16AsU32(p)));
}

// ------------------------------ fp8

// Saturating RNE of v to fp8 (e4m3fn when kE4M3, else e5m2), as u32 lanes holding the codes.
template <bool kE4M3>
HWY_INLINE VU32 F32ToFp8(VF v) {
  const DU32 du;
  const DI32 di;
  constexpr int kMantBits = kE4M3 ? 3 : 2;
  constexpr uint32_t kMaxBits = kE4M3 ? 0x43E00000u : 0x47600000u;       // 448, 57344.
  constexpr int32_t kMinNormalBits = kE4M3 ? (121 << 23) : (113 << 23);  // 2^-6, 2^-14.
  // -(127 - bias) << 23 (wrapping) plus the rounding bias of the dropped bits.
  constexpr uint32_t kRebias = (kE4M3 ? 0xC4000000u : 0xC8000000u) + ((1u << (22 - kMantBits)) - 1);
  constexpr float kSubMagic = kE4M3 ? 16384.0f : 128.0f;  // ulp = the subnormal step.
  constexpr uint32_t kSubMagicBits = kE4M3 ? 0x46800000u : 0x43000000u;
  constexpr uint32_t kNaN = kE4M3 ? 0x7Fu : 0x7Eu;

  const VU32 bits = hn::BitCast(du, v);
  const VU32 sign = hn::ShiftRight<24>(hn::And(bits, hn::Set(du, 0x80000000u)));
  const auto ai = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  const auto is_nan = hn::Gt(ai, hn::Set(di, 0x7F800000));
  // Saturate (inf included); NaN lanes are overwritten below.
  const VU32 a = hn::BitCast(du, hn::Min(ai, hn::Set(di, static_cast<int32_t>(kMaxBits))));
  const VU32 odd = hn::And(hn::ShiftRight<23 - kMantBits>(a), hn::Set(du, 1));
  const VU32 normal =
      hn::ShiftRight<23 - kMantBits>(hn::Add(hn::Add(a, hn::Set(du, kRebias)), odd));
  const VU32 sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(DF(), a), hn::Set(DF(), kSubMagic))),
                           hn::Set(du, kSubMagicBits));
  VU32 code = hn::IfThenElse(
      hn::RebindMask(du, hn::Lt(hn::BitCast(di, a), hn::Set(di, kMinNormalBits))), sub, normal);
  code = hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Set(du, kNaN), code);
  return hn::Or(code, sign);
}

// Exact decode of fp8 codes held in u32 lanes.
template <bool kE4M3>
HWY_INLINE VF Fp8ToF32(VU32 c) {
  const DU32 du;
  const DI32 di;
  constexpr int kMantBits = kE4M3 ? 3 : 2;
  constexpr uint32_t kRebias = (kE4M3 ? 120u : 112u) << 23;
  constexpr float kSubStep = kE4M3 ? 0x1p-9f : 0x1p-16f;
  const VU32 sign = hn::ShiftLeft<24>(hn::And(c, hn::Set(du, 0x80u)));
  const VU32 a = hn::And(c, hn::Set(du, 0x7Fu));
  const auto ai = hn::BitCast(di, a);
  const VU32 normal = hn::Add(hn::ShiftLeft<23 - kMantBits>(a), hn::Set(du, kRebias));
  const VU32 sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(DF(), ai), hn::Set(DF(), kSubStep)));
  VU32 bits =
      hn::IfThenElse(hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 1 << kMantBits))), sub, normal);
  if constexpr (kE4M3) {
    bits = hn::IfThenElse(hn::RebindMask(du, hn::Eq(ai, hn::Set(di, 0x7F))),
                          hn::Set(du, 0x7FC00000u), bits);
  } else {
    bits = hn::IfThenElse(hn::RebindMask(du, hn::Eq(ai, hn::Set(di, 0x7C))),
                          hn::Set(du, 0x7F800000u), bits);
    bits = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7C))),
                          hn::Set(du, 0x7FC00000u), bits);
  }
  return hn::BitCast(DF(), hn::Or(bits, sign));
}

// Fp8 codes decoded through the f16 converter, the fast path of Fp8 rows (the codecs' and the
// attention kernel's): the decoded value is DecodeFp8Unscaled<kE4M3>(p) * kFp8DecodeFactor, so a
// row multiplies by scale * kFp8DecodeFactor<kE4M3> instead of scale. Same bits as
// Fp8ToF32(LoadU8AsU32(p)) * scale (CodecSimdTest.ArbitraryBytesDecodeLikeReference, every code
// and random scales): e5m2 is the top byte of an f16; e4m3's 7 bits shifted into an f16's
// exponent and mantissa are the value / 2^8 exactly (exponent bias 7 against 15; its subnormals
// land on f16 subnormals), and scaling by a power of two before or after one multiply rounds the
// same. NaN codes are rewritten to f16 0x7E00 so that they convert to the reference's 0x7FC00000.
// Seven instructions per vector on AVX-512 (e4m3: sign-extend, shift, mask, the NaN test and fix
// in three, the conversion) against 14 through Fp8ToF32; the NaN fix is about 12% of the kernel's
// time on fp8 KV (docs/notes/quantized-kv-attention.md).
template <bool kE4M3>
inline constexpr float kFp8DecodeFactor = (KVENGINE_QUANT_HAVE_F16C && kE4M3) ? 256.0f : 1.0f;

template <bool kE4M3>
HWY_INLINE VF DecodeFp8Unscaled(const uint8_t* p) {
#if KVENGINE_QUANT_HAVE_F16C
  const hn::Rebind<int16_t, DF> di16;
  const hn::Rebind<hwy::float16_t, DF> df16;
  hn::Vec<decltype(di16)> h;
  if constexpr (kE4M3) {
    // Sign-extended, shifted by 7: the sign in bits 15 and 14, the 7-bit magnitude in 13..7; bit
    // 14 cleared, that is the f16. NaN (magnitude 0x7F) gives sign | 0x3F80, and adding 0x3E80
    // makes it sign | 0x7E00 (no carry into the sign).
    const auto c = hn::PromoteTo(
        di16, hn::LoadU(hn::Rebind<int8_t, DF>(), reinterpret_cast<const int8_t*>(p)));
    h = hn::And(hn::ShiftLeft<7>(c), hn::Set(di16, int16_t(0xBFFF)));
    const auto nan = hn::Eq(hn::And(c, hn::Set(di16, 0x7F)), hn::Set(di16, 0x7F));
    h = hn::IfThenElse(nan, hn::Add(h, hn::Set(di16, 0x3E80)), h);
  } else {
    // The code is the f16's top byte. NaN (S.11111.01-11; the infinities are f16's too) becomes
    // sign | 0x7E00.
    const hn::Rebind<uint16_t, DF> du16;
    h = hn::BitCast(di16,
                    hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(hn::Rebind<uint8_t, DF>(), p))));
    const auto magnitude = hn::And(h, hn::Set(di16, 0x7FFF));
    const auto nan = hn::Gt(magnitude, hn::Set(di16, 0x7C00));
    h = hn::IfThenElse(nan, hn::Or(hn::Xor(h, magnitude), hn::Set(di16, 0x7E00)), h);
  }
  return hn::PromoteTo(DF(), hn::BitCast(df16, h));
#else
  return Fp8ToF32<kE4M3>(LoadU8AsU32(p));
#endif
}

// Codes [0, 2 * Lanes) at p decoded as DecodeFp8Unscaled does (the same bits), the first Lanes
// into out[0] and the rest into out[1]. On AVX2 the integer steps take all 16 codes in one 256-bit
// vector, where DecodeFp8Unscaled takes 8 in a 128-bit one, and two conversions follow: e4m3 in
// 10 instructions for 16 codes instead of 16, which is most of fp8 attention's per-element cost
// there (4 heads share each decoded vector).
template <bool kE4M3>
HWY_INLINE void DecodeFp8UnscaledPair(const uint8_t* p, VF* out) {
#if HWY_TARGET == HWY_AVX2
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m256i h;
  if constexpr (kE4M3) {
    const __m256i c = _mm256_cvtepi8_epi16(bytes);
    h = _mm256_and_si256(_mm256_slli_epi16(c, 7), _mm256_set1_epi16(int16_t(0xBFFF)));
    const __m256i nan =
        _mm256_cmpeq_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x7F)), _mm256_set1_epi16(0x7F));
    h = _mm256_add_epi16(h, _mm256_and_si256(nan, _mm256_set1_epi16(0x3E80)));
  } else {
    h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
    const __m256i magnitude = _mm256_and_si256(h, _mm256_set1_epi16(0x7FFF));
    const __m256i nan = _mm256_cmpgt_epi16(magnitude, _mm256_set1_epi16(0x7C00));
    const __m256i quiet =
        _mm256_or_si256(_mm256_xor_si256(h, magnitude), _mm256_set1_epi16(0x7E00));
    h = _mm256_blendv_epi8(h, quiet, nan);
  }
  out[0] = VF{_mm256_cvtph_ps(_mm256_castsi256_si128(h))};
  out[1] = VF{_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
#else
  out[0] = DecodeFp8Unscaled<kE4M3>(p);
  out[1] = DecodeFp8Unscaled<kE4M3>(p + hn::Lanes(DF()));
#endif
}

// ------------------------------ integer codes

// RNE of v clamped to [lo, hi] as i32 lanes; NaN lanes become 0 first (as QuantizeClamped in
// codec_ref.cc).
HWY_INLINE hn::Vec<DI32> QuantizeClamped(VF v, float lo, float hi) {
  const DF df;
  v = hn::IfThenZeroElse(hn::IsNaN(v), v);
  v = hn::Min(hn::Max(v, hn::Set(df, lo)), hn::Set(df, hi));
  return hn::ConvertTo(DI32(), RoundSmall(v));
}

// Max |x| over the finite elements of x[0, n).
HWY_INLINE float AbsMaxFinite(const float* x, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF m = hn::Zero(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VF v = hn::LoadU(df, x + i);
    m = hn::Max(m, hn::IfThenElseZero(hn::IsFinite(v), hn::Abs(v)));
  }
  if (i < n) {
    HWY_ALIGN float buf[kMaxLanes] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    const VF v = hn::Load(df, buf);
    m = hn::Max(m, hn::IfThenElseZero(hn::IsFinite(v), hn::Abs(v)));
  }
  return hn::GetLane(hn::MaxOfLanes(df, m));
}

// Min and max over the finite elements of x[0, n); lo > hi when there are none.
HWY_INLINE void MinMaxFinite(const float* x, size_t n, float* lo, float* hi) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const VF pos_inf = hn::Set(df, kInf);
  const VF neg_inf = hn::Set(df, -kInf);
  VF vlo = pos_inf;
  VF vhi = neg_inf;
  for (size_t i = 0; i < n; i += lanes) {
    VF v;
    if (i + lanes <= n) {
      v = hn::LoadU(df, x + i);
    } else {  // Tail: pad with inf, which the finite mask drops.
      HWY_ALIGN float buf[kMaxLanes];
      for (size_t j = 0; j < lanes; ++j) buf[j] = i + j < n ? x[i + j] : kInf;
      v = hn::Load(df, buf);
    }
    const auto finite = hn::IsFinite(v);
    vlo = hn::Min(vlo, hn::IfThenElse(finite, v, pos_inf));
    vhi = hn::Max(vhi, hn::IfThenElse(finite, v, neg_inf));
  }
  *lo = hn::GetLane(hn::MinOfLanes(df, vlo));
  *hi = hn::GetLane(hn::MaxOfLanes(df, vhi));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
