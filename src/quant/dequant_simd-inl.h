// Per-target SIMD decoders of the block-quantized weight formats (layouts in weight_blocks.h),
// included once per Highway target by matmul_hwy.cc through foreach_target.h; not a public header.
//
// Each Decode(block, out) writes the block's elements to `out` (unaligned) with exactly the bits
// of the scalar reference (dequant_ref.cc): integer codes are unpacked in i32/u32 lanes, converted
// to float (exact), and scaled by the same float operations in the same order, d * q then + m or
// - min (weight_blocks.h: the products are exact, so only the last operation rounds, identically).
// Vectors are capped at 16 lanes so that every vector lies within one 16- or 32-element group
// sharing a scale; 16 and 32 are multiples of every capped width (1, 4, 8, 16).

#if defined(KVENGINE_KERNELS_DEQUANT_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_KERNELS_DEQUANT_SIMD_INL_H_
#undef KVENGINE_KERNELS_DEQUANT_SIMD_INL_H_
#else
#define KVENGINE_KERNELS_DEQUANT_SIMD_INL_H_
#endif

#include <bit>
#include <cstring>

#include "hwy/highway.h"
#include "quant/weight_blocks.h"
#include "quant/codec_simd-inl.h"

#if HWY_ARCH_X86
#include <immintrin.h>  // _cvtsh_ss (F16C) for block scales.
#endif

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {

#if !KVENGINE_QUANT_HAVE_F16C
// f16 bits -> float, exactly as F16ToF32 (half.h), inline for the per-block scales.
HWY_INLINE float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t a = h & 0x7FFFu;
  if (HWY_UNLIKELY(a >= 0x7C00u)) {  // inf, or NaN made quiet with its payload kept.
    const uint32_t quiet = a > 0x7C00u ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | ((a & 0x3FFu) << 13));
  }
  if (HWY_LIKELY(a >= 0x0400u)) return std::bit_cast<float>(sign | ((a << 13) + (112u << 23)));
  const float sub = static_cast<float>(a) * 0x1p-24f;  // Subnormal or zero: exact.
  return sign != 0 ? -sub : sub;
}
#endif

// The f16 at p as a float. F16C's vcvtph2ps gives the same bits as F16ToF32 for every input (NaN
// included, see half.h) in one instruction.
HWY_INLINE float LoadHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
#if KVENGINE_QUANT_HAVE_F16C
  return _cvtsh_ss(h);
#else
  return HalfBitsToFloat(h);
#endif
}

namespace dequant {

using DB = hn::CappedTag<float, 16>;  // Decode vectors: at most 16 lanes (see the top).
using DBU = hn::RebindToUnsigned<DB>;
using DBI = hn::RebindToSigned<DB>;
using DB8 = hn::Rebind<uint8_t, DB>;  // As many bytes as DB has lanes.
using VB = hn::Vec<DB>;
using VBU = hn::Vec<DBU>;

// Lanes(DB) bytes at p, each widened to a u32 lane.
HWY_INLINE VBU LoadCodes(const uint8_t* p) { return hn::PromoteTo(DBU(), hn::LoadU(DB8(), p)); }

// Small non-negative codes (u32 lanes) minus `offset`, as floats (exact).
HWY_INLINE VB CodesToFloat(VBU q, int32_t offset) {
  const DBI di;
  return hn::ConvertTo(DB(), hn::Sub(hn::BitCast(di, q), hn::Set(di, offset)));
}

HWY_INLINE uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Q4_0 / Q4_1 / Q5_0 / Q5_1 (32 elements): codes from 16 bytes of nibbles at qs and, for Q5,
// the fifth bits in qh. kHasMin: element = q * d + m; else element = (q - kOffset) * d.
template <bool kHasQh, bool kHasMin, int32_t kOffset>
HWY_INLINE void DecodeQ32(const uint8_t* qs, uint32_t qh, float d_scalar, float m_scalar,
                          float* out) {
  const DB df;
  const DBU du;
  const size_t lanes = hn::Lanes(df);
  const VB d = hn::Set(df, d_scalar);
  const VB m = hn::Set(df, m_scalar);
  const VBU mask4 = hn::Set(du, 15u);
  for (size_t j = 0; j < 16; j += lanes) {
    const VBU bytes = LoadCodes(qs + j);
    VBU q0 = hn::And(bytes, mask4);
    VBU q1 = hn::ShiftRight<4>(bytes);
    if constexpr (kHasQh) {
      const VBU bit = hn::Set(du, 1u);
      const VBU shift = hn::Iota(du, static_cast<uint32_t>(j));  // Lane i: bit j + i of qh.
      const VBU qhv = hn::Set(du, qh);
      q0 = hn::Or(q0, hn::ShiftLeft<4>(hn::And(qhv >> shift, bit)));
      q1 = hn::Or(q1, hn::ShiftLeft<4>(hn::And(qhv >> hn::Add(shift, hn::Set(du, 16u)), bit)));
    }
    if constexpr (kHasMin) {
      hn::StoreU(hn::Add(hn::Mul(CodesToFloat(q0, 0), d), m), df, out + j);
      hn::StoreU(hn::Add(hn::Mul(CodesToFloat(q1, 0), d), m), df, out + j + 16);
    } else {
      hn::StoreU(hn::Mul(CodesToFloat(q0, kOffset), d), df, out + j);
      hn::StoreU(hn::Mul(CodesToFloat(q1, kOffset), d), df, out + j + 16);
    }
  }
}

// Q4_K (kHasQh false) and Q5_K: 256 elements.
template <bool kHasQh>
HWY_INLINE void DecodeQ45K(const uint8_t* block, float* out) {
  const DB df;
  const DBU du;
  const size_t lanes = hn::Lanes(df);
  const float d = LoadHalf(block);
  const float dmin = LoadHalf(block + 2);
  const uint8_t* scales = block + 4;
  const uint8_t* qh = block + 16;
  const uint8_t* qs = block + (kHasQh ? 48 : 16);
  const VBU mask4 = hn::Set(du, 15u);
  const VBU bit = hn::Set(du, 1u);
  for (int i = 0; i < 4; ++i) {
    uint8_t sc, mn;
    KQuantScaleMin(scales, 2 * i, &sc, &mn);
    const VB d0 = hn::Set(df, d * static_cast<float>(sc));
    const VB m0 = hn::Set(df, dmin * static_cast<float>(mn));
    KQuantScaleMin(scales, 2 * i + 1, &sc, &mn);
    const VB d1 = hn::Set(df, d * static_cast<float>(sc));
    const VB m1 = hn::Set(df, dmin * static_cast<float>(mn));
    for (size_t l = 0; l < 32; l += lanes) {
      const VBU bytes = LoadCodes(qs + 32 * i + l);
      VBU q0 = hn::And(bytes, mask4);
      VBU q1 = hn::ShiftRight<4>(bytes);
      if constexpr (kHasQh) {
        const VBU h = LoadCodes(qh + l);
        q0 = hn::Or(q0, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * i), bit)));
        q1 = hn::Or(q1, hn::ShiftLeft<4>(hn::And(hn::ShiftRightSame(h, 2 * i + 1), bit)));
      }
      hn::StoreU(hn::Sub(hn::Mul(d0, CodesToFloat(q0, 0)), m0), df, out + 64 * i + l);
      hn::StoreU(hn::Sub(hn::Mul(d1, CodesToFloat(q1, 0)), m1), df, out + 64 * i + 32 + l);
    }
  }
}

// Q6_K: 256 elements.
HWY_INLINE void DecodeQ6K(const uint8_t* block, float* out) {
  const DB df;
  const DBU du;
  const size_t lanes = hn::Lanes(df);
  const float d = LoadHalf(block + 208);
  const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
  const VBU mask4 = hn::Set(du, 15u);
  const VBU mask2 = hn::Set(du, 3u);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = block + 64 * h;
    const uint8_t* qh = block + 128 + 32 * h;
    for (size_t l = 0; l < 32; l += lanes) {
      const VBU a = LoadCodes(ql + l);
      const VBU b = LoadCodes(ql + 32 + l);
      const VBU hb = LoadCodes(qh + l);
      const VBU q[4] = {
          hn::Or(hn::And(a, mask4), hn::ShiftLeft<4>(hn::And(hb, mask2))),
          hn::Or(hn::And(b, mask4), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(hb), mask2))),
          hn::Or(hn::ShiftRight<4>(a), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(hb), mask2))),
          hn::Or(hn::ShiftRight<4>(b), hn::ShiftLeft<4>(hn::ShiftRight<6>(hb)))};
      for (size_t k = 0; k < 4; ++k) {
        const size_t e = 128 * static_cast<size_t>(h) + 32 * k + l;  // First element; same e / 16
        const VB ds = hn::Set(df, d * static_cast<float>(scales[e / 16]));  // for every lane.
        hn::StoreU(hn::Mul(ds, CodesToFloat(q[k], 32)), df, out + e);
      }
    }
  }
}

}  // namespace dequant

// ------------------------------ one block decoder per format: kElements floats from kBytes.

struct Q4_0Block {
  static constexpr size_t kElements = kQBlockElements;
  static constexpr size_t kBytes = kQ4_0BlockBytes;
  static void Decode(const uint8_t* p, float* out) {
    dequant::DecodeQ32<false, false, 8>(p + 2, 0, LoadHalf(p), 0.0f, out);
  }
};
struct Q4_1Block {
  static constexpr size_t kElements = kQBlockElements;
  static constexpr size_t kBytes = kQ4_1BlockBytes;
  static void Decode(const uint8_t* p, float* out) {
    dequant::DecodeQ32<false, true, 0>(p + 4, 0, LoadHalf(p), LoadHalf(p + 2), out);
  }
};
struct Q5_0Block {
  static constexpr size_t kElements = kQBlockElements;
  static constexpr size_t kBytes = kQ5_0BlockBytes;
  static void Decode(const uint8_t* p, float* out) {
    dequant::DecodeQ32<true, false, 16>(p + 6, dequant::LoadU32(p + 2), LoadHalf(p), 0.0f, out);
  }
};
struct Q5_1Block {
  static constexpr size_t kElements = kQBlockElements;
  static constexpr size_t kBytes = kQ5_1BlockBytes;
  static void Decode(const uint8_t* p, float* out) {
    dequant::DecodeQ32<true, true, 0>(p + 8, dequant::LoadU32(p + 4), LoadHalf(p),
                                      LoadHalf(p + 2), out);
  }
};
struct Q4_KBlock {
  static constexpr size_t kElements = kQKBlockElements;
  static constexpr size_t kBytes = kQ4_KBlockBytes;
  static void Decode(const uint8_t* p, float* out) { dequant::DecodeQ45K<false>(p, out); }
};
struct Q5_KBlock {
  static constexpr size_t kElements = kQKBlockElements;
  static constexpr size_t kBytes = kQ5_KBlockBytes;
  static void Decode(const uint8_t* p, float* out) { dequant::DecodeQ45K<true>(p, out); }
};
struct Q6_KBlock {
  static constexpr size_t kElements = kQKBlockElements;
  static constexpr size_t kBytes = kQ6_KBlockBytes;
  static void Decode(const uint8_t* p, float* out) { dequant::DecodeQ6K(p, out); }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
