// The block quantizers of weight_quantize.h. Field offsets are weight_blocks.h's (restated at
// each packer, since synth/ does not include kernels/ headers).
#include "quant/weight_quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "quant/codec_params.h"
#include "quant/half.h"

namespace kvengine {
namespace {

static_assert(std::endian::native == std::endian::little, "block fields are little-endian");

constexpr size_t kBlock = 32;    // Q4_0 .. Q5_1 elements per block.
constexpr size_t kSuper = 256;   // K-quant elements per super-block.
constexpr size_t kSubK = 32;     // Q4_K / Q5_K elements per sub-block (8 per super-block).
constexpr size_t kSub6 = 16;     // Q6_K elements per sub-block (16 per super-block).
constexpr int kMaxScale6 = 63;   // Q4_K / Q5_K 6-bit scales and mins.
constexpr int kMaxScale8 = 127;  // Q6_K int8 scales (-128 unused, so the range is symmetric).
// A ratio that is an integer up to the rounding of the division that formed it rounds up to that
// integer, not the next one (CeilCode).
constexpr float kCeilSlack = 0x1p-12f;

using quant_internal::StoreU16;
void StoreU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

// Stores v as f16 rounded away from zero (so |stored| >= |v|) and returns the stored value.
float StoreF16AwayFromZero(uint8_t* p, float v) {
  const uint16_t h = v >= 0 ? F32ToF16RoundUp(v) : F32ToF16RoundDown(v);
  StoreU16(p, h);
  return F16ToF32(h);
}

// round(v) clamped to [lo, hi]; v is finite and at most a few times the range (callers divide by
// a scale at least as large as the values' spread).
int RoundClamp(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::round(std::clamp(v, -1e6f, 1e6f))), lo, hi);
}

// The smallest integer >= v (up to kCeilSlack), at least 1 when v > 0, at most `cap`: the 6- or
// 8-bit multiplier of a super-block scale that covers a sub-block's need v (in units of it).
int CeilCode(float v, int cap) {
  if (!(v > 0)) return 0;
  return std::clamp(static_cast<int>(std::ceil(v - kCeilSlack)), 1, cap);
}

// Q4_0 / Q5_0 codes of one block of 32: element = (q - zero) * d, q in [0, 2 zero). Stores d at
// `d_at` and returns the codes in q.
void SymmetricCodes(const float* x, int zero, uint8_t* d_at, std::array<int, kBlock>& q) {
  float m = 0, amax = 0;  // The element of largest magnitude (the first of equals), signed.
  for (size_t j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      m = x[j];
    }
  }
  const float d = StoreF16AwayFromZero(d_at, m == 0 ? 0.0f : m / static_cast<float>(-zero));
  for (size_t j = 0; j < kBlock; ++j) {
    q[j] = d == 0 ? zero : RoundClamp(x[j] / d + static_cast<float>(zero), 0, 2 * zero - 1);
  }
}

// Q4_1 / Q5_1 codes of one block of 32: element = q * d + m, q in [0, levels]. Stores d at d_at
// and m at m_at.
void AffineCodes(const float* x, int levels, uint8_t* d_at, uint8_t* m_at,
                 std::array<int, kBlock>& q) {
  float lo = x[0], hi = x[0];
  for (size_t j = 1; j < kBlock; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const uint16_t m_bits = F32ToF16RoundDown(lo);  // m <= every element.
  StoreU16(m_at, m_bits);
  const float m = F16ToF32(m_bits);
  const float d = StoreF16AwayFromZero(d_at, (hi - m) / static_cast<float>(levels));
  for (size_t j = 0; j < kBlock; ++j) {
    q[j] = d == 0 ? 0 : RoundClamp((x[j] - m) / d, 0, levels);
  }
}

// Q4_0 (18 B: f16 d @0, qs[16] @2) and Q5_0 (22 B: f16 d @0, u32 qh @2, qs[16] @6). Low nibbles
// of qs hold elements 0-15, high nibbles 16-31; bit j of qh is bit 4 of element j's code.
void QuantizeQ4_0OrQ5_0(const float* x, bool five_bits, uint8_t* out) {
  std::array<int, kBlock> q;
  SymmetricCodes(x, five_bits ? 16 : 8, out, q);
  uint8_t* qs = out + (five_bits ? 6 : 2);
  uint32_t qh = 0;
  for (size_t j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 15) | (q[j + 16] & 15) << 4);
  }
  for (size_t j = 0; j < kBlock; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  if (five_bits) StoreU32(out + 2, qh);
}

// Q4_1 (20 B: f16 d @0, f16 m @2, qs[16] @4) and Q5_1 (24 B: d @0, m @2, u32 qh @4, qs[16] @8).
void QuantizeQ4_1OrQ5_1(const float* x, bool five_bits, uint8_t* out) {
  std::array<int, kBlock> q;
  AffineCodes(x, five_bits ? 31 : 15, out, out + 2, q);
  uint8_t* qs = out + (five_bits ? 8 : 4);
  uint32_t qh = 0;
  for (size_t j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 15) | (q[j + 16] & 15) << 4);
  }
  for (size_t j = 0; j < kBlock; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  if (five_bits) StoreU32(out + 4, qh);
}

// Q4_K (144 B: f16 d @0, f16 dmin @2, scales[12] @4, qs[128] @16) and Q5_K (176 B: the same
// head, qh[32] @16, qs[128] @48). Element e of sub-block s = e / 32 decodes as
// (d * sc[s]) * q - dmin * mn[s], q in [0, levels].
void QuantizeQ4_KOrQ5_K(const float* x, bool five_bits, uint8_t* out) {
  constexpr size_t kSubs = kSuper / kSubK;
  const int levels = five_bits ? 31 : 15;
  // Per sub-block: need_min = -min(0, min x) >= 0 (the offset subtracted), top = max x.
  std::array<float, kSubs> need_min{}, top{};
  float max_need_min = 0;
  for (size_t s = 0; s < kSubs; ++s) {
    float lo = 0, hi = x[s * kSubK];
    for (size_t j = 0; j < kSubK; ++j) {
      lo = std::min(lo, x[s * kSubK + j]);
      hi = std::max(hi, x[s * kSubK + j]);
    }
    need_min[s] = -lo;
    top[s] = hi;
    max_need_min = std::max(max_need_min, need_min[s]);
  }
  const float dmin = StoreF16AwayFromZero(out + 2, max_need_min / kMaxScale6);
  // The mins, then the range each sub-block's codes must span above its stored min.
  std::array<int, kSubs> sc{}, mn{};
  std::array<float, kSubs> range{};
  float max_range = 0;
  for (size_t s = 0; s < kSubs; ++s) {
    mn[s] = dmin == 0 ? 0 : CeilCode(need_min[s] / dmin, kMaxScale6);
    range[s] = std::max(0.0f, top[s] + dmin * static_cast<float>(mn[s]));
    max_range = std::max(max_range, range[s]);
  }
  const float d = StoreF16AwayFromZero(out, max_range / static_cast<float>(levels * kMaxScale6));
  for (size_t s = 0; s < kSubs; ++s) {
    sc[s] = d == 0 ? 0 : CeilCode(range[s] / (static_cast<float>(levels) * d), kMaxScale6);
  }
  // scales[12]: the inverse of weight_blocks.h's KQuantScaleMin. Sub-blocks 0-3 keep their 6 bits
  // in the low bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 keep their low 4 bits in
  // bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in bits 6-7 of bytes 0-3
  // (scale) and 4-7 (min).
  uint8_t* scales = out + 4;
  for (size_t s = 0; s < 4; ++s) {
    scales[s] = static_cast<uint8_t>(sc[s] | (sc[s + 4] >> 4) << 6);
    scales[s + 4] = static_cast<uint8_t>(mn[s] | (mn[s + 4] >> 4) << 6);
    scales[s + 8] = static_cast<uint8_t>((sc[s + 4] & 15) | (mn[s + 4] & 15) << 4);
  }
  // Codes; qs[32 i + l] holds element 64 i + l (sub-block 2 i) in its low nibble and 64 i + 32 + l
  // (sub-block 2 i + 1) in its high one; Q5_K's qh[l] bit 2 i / 2 i + 1 is their bit 4.
  std::array<int, kSuper> q;
  for (size_t e = 0; e < kSuper; ++e) {
    const size_t s = e / kSubK;
    const float ds = d * static_cast<float>(sc[s]);  // Exact: 11 x 6 significant bits.
    const float ms = dmin * static_cast<float>(mn[s]);
    q[e] = ds == 0 ? 0 : RoundClamp((x[e] + ms) / ds, 0, levels);
  }
  uint8_t* qh = out + 16;
  uint8_t* qs = out + (five_bits ? 48 : 16);
  if (five_bits) std::memset(qh, 0, 32);
  for (size_t i = 0; i < 4; ++i) {
    for (size_t l = 0; l < 32; ++l) {
      const int lo = q[64 * i + l], hi = q[64 * i + 32 + l];
      qs[32 * i + l] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
      if (five_bits) {
        qh[l] |= static_cast<uint8_t>(((lo >> 4) & 1) << (2 * i) | ((hi >> 4) & 1) << (2 * i + 1));
      }
    }
  }
}

// Q6_K (210 B: ql[128] @0, qh[64] @128, int8 scales[16] @192, f16 d @208). Element e decodes as
// (d * scales[e / 16]) * (q - 32), q in [0, 63].
void QuantizeQ6_K(const float* x, uint8_t* out) {
  constexpr size_t kSubs = kSuper / kSub6;
  // Per sub-block, as Q4_0: the step that maps its element of largest magnitude to code 0.
  std::array<float, kSubs> step{};
  float max_step = 0;
  for (size_t s = 0; s < kSubs; ++s) {
    float m = 0, amax = 0;
    for (size_t j = 0; j < kSub6; ++j) {
      const float v = x[s * kSub6 + j];
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        m = v;
      }
    }
    step[s] = m == 0 ? 0.0f : m / -32.0f;
    max_step = std::max(max_step, amax / 32.0f);
  }
  const float d = StoreF16AwayFromZero(out + 208, max_step / kMaxScale8);
  std::array<int, kSubs> sc{};
  for (size_t s = 0; s < kSubs; ++s) {
    const int mag = d == 0 ? 0 : CeilCode(std::fabs(step[s]) / d, kMaxScale8);
    sc[s] = step[s] < 0 ? -mag : mag;
    out[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(sc[s]));
  }
  std::array<int, kSuper> q;
  for (size_t e = 0; e < kSuper; ++e) {
    const float ds = d * static_cast<float>(sc[e / kSub6]);
    q[e] = ds == 0 ? 32 : RoundClamp(x[e] / ds + 32.0f, 0, 63);
  }
  // Per half h (elements 128 h ..): ql[64 h + l] holds elements 128 h + l (low nibble) and
  // 128 h + 64 + l (high); ql[64 h + 32 + l] elements 128 h + 32 + l and 128 h + 96 + l;
  // qh[32 h + l] the top 2 bits of elements 128 h + l, + 32 + l, + 64 + l, + 96 + l at bits 0, 2,
  // 4, 6.
  for (size_t h = 0; h < 2; ++h) {
    uint8_t* ql = out + 64 * h;
    uint8_t* qh = out + 128 + 32 * h;
    const int* qb = q.data() + 128 * h;
    for (size_t l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((qb[l] & 15) | (qb[l + 64] & 15) << 4);
      ql[l + 32] = static_cast<uint8_t>((qb[l + 32] & 15) | (qb[l + 96] & 15) << 4);
      qh[l] = static_cast<uint8_t>((qb[l] >> 4) | (qb[l + 32] >> 4) << 2 | (qb[l + 64] >> 4) << 4 |
                                   (qb[l + 96] >> 4) << 6);
    }
  }
}

}  // namespace

bool IsQuantizedBlockType(GgmlType type) {
  return type == GgmlType::kQ4_0 || type == GgmlType::kQ4_1 || type == GgmlType::kQ5_0 ||
         type == GgmlType::kQ5_1 || type == GgmlType::kQ4_K || type == GgmlType::kQ5_K ||
         type == GgmlType::kQ6_K;
}

void QuantizeBlocks(GgmlType type, std::span<const float> x, std::span<uint8_t> out) {
  KV_CHECK(IsQuantizedBlockType(type)) << "no block quantizer for " << GgmlTypeName(type);
  const GgmlTypeTraits traits = GetGgmlTypeTraits(type);
  KV_CHECK(x.size() % traits.block_size == 0);
  const size_t n_blocks = x.size() / traits.block_size;
  KV_CHECK(out.size() == n_blocks * traits.bytes_per_block);
  for (size_t b = 0; b < n_blocks; ++b) {
    const float* xb = x.data() + b * traits.block_size;
    uint8_t* ob = out.data() + b * traits.bytes_per_block;
    if (type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0) {
      QuantizeQ4_0OrQ5_0(xb, type == GgmlType::kQ5_0, ob);
    } else if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) {
      QuantizeQ4_1OrQ5_1(xb, type == GgmlType::kQ5_1, ob);
    } else if (type == GgmlType::kQ4_K || type == GgmlType::kQ5_K) {
      QuantizeQ4_KOrQ5_K(xb, type == GgmlType::kQ5_K, ob);
    } else {
      QuantizeQ6_K(xb, ob);
    }
  }
}

}  // namespace kvengine
