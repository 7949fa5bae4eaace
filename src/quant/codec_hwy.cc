// SIMD row codecs, compiled once per Highway target (foreach_target.h) and chosen at run time.
//
// Shape of every kernel: an "element codec" (F16Codec, Int8Codec, ...) turns Lanes(DF) encoded
// elements into one float vector and back; generic loops (EncodeLoop, DecodeLoop, DotLoop,
// AxpyLoop) walk a row with it, finishing a tail shorter than a vector through zero-padded stack
// buffers (so any n >= 1 works and nothing is read or written past the row). int4 first unpacks
// its nibbles into one byte per code (a chunk of whole groups at a time) and then runs the same
// loops group by group with that group's scale and min.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/codec_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "hwy/highway.h"
#include "quant/codec.h"
#include "quant/codec_params.h"
#include "quant/codec_simd-inl.h"
#include "quant/half.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

using quant_internal::Int4Params;
using quant_internal::kInt4QMax;
using quant_internal::kInt8QMax;

// ------------------------------ element codecs: kBytes per element, Decode / Encode one vector.

struct F32Codec {
  static constexpr size_t kBytes = 4;
  VF Decode(const uint8_t* p) const { return LoadBytes(DF(), p); }
  void Encode(VF v, uint8_t* p) const { StoreBytes(DF(), v, p); }
};

struct F16Codec {
  static constexpr size_t kBytes = 2;
  VF Decode(const uint8_t* p) const { return DecodeF16(p); }
  void Encode(VF v, uint8_t* p) const { EncodeF16(v, p); }
};

struct Bf16Codec {
  static constexpr size_t kBytes = 2;
  VF Decode(const uint8_t* p) const { return DecodeBf16(p); }
  void Encode(VF v, uint8_t* p) const { EncodeBf16(v, p); }
};

// x = fp8(code) * scale; encoding multiplies by inv_scale first.
template <bool kE4M3>
struct Fp8Codec {
  static constexpr size_t kBytes = 1;
  float scale;
  float inv_scale;
  VF Decode(const uint8_t* p) const {
    return hn::Mul(DecodeFp8Unscaled<kE4M3>(p), hn::Set(DF(), scale * kFp8DecodeFactor<kE4M3>));
  }
  // 2 * Lanes elements, the same values as two Decode calls.
  void DecodePair(const uint8_t* p, VF* out) const {
    DecodeFp8UnscaledPair<kE4M3>(p, out);
    const VF s = hn::Set(DF(), scale * kFp8DecodeFactor<kE4M3>);
    out[0] = hn::Mul(out[0], s);
    out[1] = hn::Mul(out[1], s);
  }
  void Encode(VF v, uint8_t* p) const {
    StoreU32AsU8(F32ToFp8<kE4M3>(hn::Mul(v, hn::Set(DF(), inv_scale))), p);
  }
};

// x = code * scale, code in [-127, 127].
struct Int8Codec {
  static constexpr size_t kBytes = 1;
  float scale;
  float inv_scale;
  VF Decode(const uint8_t* p) const {
    const hn::Rebind<int8_t, DF> d8;
    const auto codes = hn::PromoteTo(DI32(), hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
    return hn::Mul(hn::ConvertTo(DF(), codes), hn::Set(DF(), scale));
  }
  void Encode(VF v, uint8_t* p) const {
    const hn::Rebind<int8_t, DF> d8;
    const auto q = QuantizeClamped(hn::Mul(v, hn::Set(DF(), inv_scale)), -kInt8QMax, kInt8QMax);
    hn::StoreU(hn::DemoteTo(d8, q), d8, reinterpret_cast<int8_t*>(p));
  }
};

// Unpacked int4 codes, one per byte: x = min + code * scale (multiply then add, as the reference).
struct Int4CodeCodec {
  static constexpr size_t kBytes = 1;
  Int4Params params;
  VF Decode(const uint8_t* p) const {
    const VF codes = hn::ConvertTo(DF(), hn::BitCast(DI32(), LoadU8AsU32(p)));
    return hn::Add(hn::Mul(codes, hn::Set(DF(), params.scale)), hn::Set(DF(), params.min));
  }
  void Encode(VF v, uint8_t* p) const {
    const VF shifted = hn::Sub(v, hn::Set(DF(), params.min));
    const auto q =
        QuantizeClamped(hn::Mul(shifted, hn::Set(DF(), params.inv_scale)), 0.0f, kInt4QMax);
    StoreU32AsU8(hn::BitCast(DU32(), q), p);
  }
};

// ------------------------------ loops over n elements; tails go through padded buffers.

template <class C>
void EncodeLoop(const C& c, const float* x, size_t n, uint8_t* out) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) c.Encode(hn::LoadU(df, x + i), out + i * C::kBytes);
  if (i == n) return;
  HWY_ALIGN float in[kMaxLanes] = {};
  HWY_ALIGN uint8_t enc[kMaxLanes * C::kBytes];
  std::memcpy(in, x + i, (n - i) * sizeof(float));
  c.Encode(hn::Load(df, in), enc);
  std::memcpy(out + i * C::kBytes, enc, (n - i) * C::kBytes);
}

template <class C>
void DecodeLoop(const C& c, const uint8_t* p, size_t n, float* out) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  if constexpr (requires(VF * v) { c.DecodePair(p, v); }) {  // Codecs that decode two at once.
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      VF v[2];
      c.DecodePair(p + i * C::kBytes, v);
      hn::StoreU(v[0], df, out + i);
      hn::StoreU(v[1], df, out + i + lanes);
    }
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(c.Decode(p + i * C::kBytes), df, out + i);
  if (i == n) return;
  HWY_ALIGN uint8_t enc[kMaxLanes * C::kBytes] = {};
  HWY_ALIGN float dec[kMaxLanes];
  std::memcpy(enc, p + i * C::kBytes, (n - i) * C::kBytes);
  hn::Store(c.Decode(enc), df, dec);
  std::memcpy(out + i, dec, (n - i) * sizeof(float));
}

// acc0 + acc1 += decoded * q, lane-wise (two chains to hide the FMA latency).
template <class C>
void DotLoop(const C& c, const uint8_t* p, const float* q, size_t n, VF& acc0, VF& acc1) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(c.Decode(p + i * C::kBytes), hn::LoadU(df, q + i), acc0);
    acc1 = hn::MulAdd(c.Decode(p + (i + lanes) * C::kBytes), hn::LoadU(df, q + i + lanes), acc1);
  }
  for (; i + lanes <= n; i += lanes) {
    acc0 = hn::MulAdd(c.Decode(p + i * C::kBytes), hn::LoadU(df, q + i), acc0);
  }
  if (i == n) return;
  // Padding: codes 0 and q 0, so padded lanes add decoded(0) * 0 = 0.
  HWY_ALIGN uint8_t enc[kMaxLanes * C::kBytes] = {};
  HWY_ALIGN float qpad[kMaxLanes] = {};
  std::memcpy(enc, p + i * C::kBytes, (n - i) * C::kBytes);
  std::memcpy(qpad, q + i, (n - i) * sizeof(float));
  acc1 = hn::MulAdd(c.Decode(enc), hn::Load(df, qpad), acc1);
}

template <class C>
void AxpyLoop(const C& c, const uint8_t* p, float a, size_t n, float* acc) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const VF va = hn::Set(df, a);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::MulAdd(va, c.Decode(p + i * C::kBytes), hn::LoadU(df, acc + i)), df, acc + i);
  }
  if (i == n) return;
  HWY_ALIGN uint8_t enc[kMaxLanes * C::kBytes] = {};
  HWY_ALIGN float sum[kMaxLanes] = {};
  std::memcpy(enc, p + i * C::kBytes, (n - i) * C::kBytes);
  std::memcpy(sum, acc + i, (n - i) * sizeof(float));
  hn::Store(hn::MulAdd(va, c.Decode(enc), hn::Load(df, sum)), df, sum);
  std::memcpy(acc + i, sum, (n - i) * sizeof(float));
}

// ------------------------------ int4 nibble packing

// Codes are handled in chunks of whole groups, at most this many elements, an even number unless
// the chunk ends the row (so every chunk starts on a byte boundary).
constexpr size_t kInt4Chunk = 256;

size_t Int4ChunkElements(size_t g) {
  size_t groups = kInt4Chunk / g;
  if (g % 2 == 1) groups &= ~size_t{1};
  return groups * g;
}

// codes[0, len) (one code per byte) -> ceil(len / 2) packed bytes, low nibble first.
void PackNibbles(const uint8_t* codes, size_t len, uint8_t* out) {
  const hn::ScalableTag<uint16_t> du16;
  const hn::Rebind<uint8_t, decltype(du16)> du8;
  const size_t lanes = hn::Lanes(du16);
  const size_t pairs = len / 2;
  size_t j = 0;
  for (; j + lanes <= pairs; j += lanes) {
    const auto w = LoadBytes(du16, codes + 2 * j);  // Code 2j in the low byte, 2j+1 in the high.
    const auto packed = hn::Or(hn::And(w, hn::Set(du16, 0x000F)),
                               hn::And(hn::ShiftRight<4>(w), hn::Set(du16, 0x00F0)));
    hn::StoreU(hn::DemoteTo(du8, hn::BitCast(hn::RebindToSigned<decltype(du16)>(), packed)), du8,
               out + j);
  }
  for (; j < pairs; ++j) out[j] = static_cast<uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
  if (len % 2 == 1) out[pairs] = codes[len - 1];
}

// ceil(len / 2) packed bytes -> codes[0, 2 * ceil(len / 2)) (one past len when len is odd).
void UnpackNibbles(const uint8_t* packed, size_t len, uint8_t* codes) {
  const hn::ScalableTag<uint16_t> du16;
  const hn::Rebind<uint8_t, decltype(du16)> du8;
  const size_t lanes = hn::Lanes(du16);
  const size_t bytes = (len + 1) / 2;
  size_t j = 0;
  for (; j + lanes <= bytes; j += lanes) {
    const auto w = hn::PromoteTo(du16, hn::LoadU(du8, packed + j));
    const auto pair = hn::Or(hn::And(w, hn::Set(du16, 0x000F)),
                             hn::ShiftLeft<4>(hn::And(w, hn::Set(du16, 0x00F0))));
    StoreBytes(du16, pair, codes + 2 * j);
  }
  for (; j < bytes; ++j) {
    codes[2 * j] = packed[j] & 0xF;
    codes[2 * j + 1] = static_cast<uint8_t>(packed[j] >> 4);
  }
}

// Calls f(codec, codes, start, g) for every group of an encoded int4 row: codes points at the
// group's unpacked codes, start is the group's first element. The groups' f16 scale / min pairs
// of a chunk are decoded together with the f16 kernel (the same values F16ToF32 gives).
template <class F>
void ForEachInt4Group(const uint8_t* data, const uint8_t* scale, size_t n, const F& f) {
  const size_t g = static_cast<size_t>(Int4GroupSize(static_cast<int>(n)));
  const size_t chunk = Int4ChunkElements(g);
  HWY_ALIGN uint8_t codes[kInt4Chunk + 2];
  HWY_ALIGN float params[2 * kInt4Chunk];  // Per group of the chunk: scale, min.
  for (size_t c0 = 0; c0 < n; c0 += chunk) {
    const size_t len = std::min(chunk, n - c0);
    UnpackNibbles(data + c0 / 2, len, codes);
    DecodeLoop(F16Codec(), scale + 4 * (c0 / g), 2 * (len / g), params);
    for (size_t j = 0; j < len / g; ++j) {
      Int4Params p;
      p.scale = params[2 * j];
      p.min = params[2 * j + 1];
      f(Int4CodeCodec{p}, codes + j * g, c0 + j * g, g);
    }
  }
}

void EncodeInt4(const float* x, size_t n, uint8_t* data, uint8_t* scale) {
  const size_t g = static_cast<size_t>(Int4GroupSize(static_cast<int>(n)));
  const size_t chunk = Int4ChunkElements(g);
  HWY_ALIGN uint8_t codes[kInt4Chunk];
  for (size_t c0 = 0; c0 < n; c0 += chunk) {
    const size_t len = std::min(chunk, n - c0);
    for (size_t start = c0; start < c0 + len; start += g) {
      float lo;
      float hi;
      MinMaxFinite(x + start, g, &lo, &hi);
      const Int4Params p = quant_internal::MakeInt4Params(lo, hi);
      quant_internal::StoreU16(scale + 4 * (start / g), p.scale_f16);
      quant_internal::StoreU16(scale + 4 * (start / g) + 2, p.min_f16);
      EncodeLoop(Int4CodeCodec{p}, x + start, g, codes + (start - c0));
    }
    PackNibbles(codes, len, data + c0 / 2);
  }
}

// ------------------------------ row kernels

// Calls f(codec) with the element codec of `dtype` (not int4) reading its stored scale.
template <class F>
void VisitCodec(KvDtype dtype, const uint8_t* scale, const F& f) {
  const auto stored_scale = [scale] { return F16ToF32(quant_internal::LoadU16(scale)); };
  switch (dtype) {
    case KvDtype::kF32:
      return f(F32Codec());
    case KvDtype::kF16:
      return f(F16Codec());
    case KvDtype::kBF16:
      return f(Bf16Codec());
    case KvDtype::kFp8E4M3:
      return f(Fp8Codec<true>{stored_scale(), 0.0f});
    case KvDtype::kFp8E5M2:
      return f(Fp8Codec<false>{stored_scale(), 0.0f});
    case KvDtype::kInt8:
      return f(Int8Codec{stored_scale(), 0.0f});
    case KvDtype::kInt4:
      return;  // Grouped: the callers use ForEachInt4Group.
  }
}

template <class C>
void EncodeSymmetric(const float* x, size_t n, float qmax, uint8_t* data, uint8_t* scale) {
  const auto s = quant_internal::MakeSymmetricScale(AbsMaxFinite(x, n), qmax);
  quant_internal::StoreU16(scale, s.scale_f16);
  EncodeLoop(C{s.scale, s.inv_scale}, x, n, data);
}

void EncodeRowT(KvDtype dtype, const float* x, int n_int, uint8_t* data, uint8_t* scale) {
  const size_t n = static_cast<size_t>(n_int);
  switch (dtype) {
    case KvDtype::kF32:
      std::memcpy(data, x, n * sizeof(float));
      return;
    case KvDtype::kF16:
      return EncodeLoop(F16Codec(), x, n, data);
    case KvDtype::kBF16:
      return EncodeLoop(Bf16Codec(), x, n, data);
    case KvDtype::kFp8E4M3:
      return EncodeSymmetric<Fp8Codec<true>>(x, n, kFp8E4M3Max, data, scale);
    case KvDtype::kFp8E5M2:
      return EncodeSymmetric<Fp8Codec<false>>(x, n, kFp8E5M2Max, data, scale);
    case KvDtype::kInt8:
      return EncodeSymmetric<Int8Codec>(x, n, kInt8QMax, data, scale);
    case KvDtype::kInt4:
      return EncodeInt4(x, n, data, scale);
  }
}

void DecodeRowT(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n_int, float* out) {
  const size_t n = static_cast<size_t>(n_int);
  if (dtype == KvDtype::kInt4) {
    ForEachInt4Group(data, scale, n,
                     [out](const auto& c, const uint8_t* codes, size_t start, size_t g) {
                       DecodeLoop(c, codes, g, out + start);
                     });
    return;
  }
  VisitCodec(dtype, scale, [&](const auto& c) { DecodeLoop(c, data, n, out); });
}

float DotRowT(KvDtype dtype, const uint8_t* data, const uint8_t* scale, const float* q, int n_int) {
  const size_t n = static_cast<size_t>(n_int);
  const DF df;
  VF acc0 = hn::Zero(df);
  VF acc1 = hn::Zero(df);
  if (dtype == KvDtype::kInt4) {
    ForEachInt4Group(data, scale, n,
                     [&](const auto& c, const uint8_t* codes, size_t start, size_t g) {
                       DotLoop(c, codes, q + start, g, acc0, acc1);
                     });
  } else {
    VisitCodec(dtype, scale, [&](const auto& c) { DotLoop(c, data, q, n, acc0, acc1); });
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
}

void AxpyRowT(KvDtype dtype, const uint8_t* data, const uint8_t* scale, float a, int n_int,
              float* acc) {
  const size_t n = static_cast<size_t>(n_int);
  if (dtype == KvDtype::kInt4) {
    ForEachInt4Group(data, scale, n,
                     [&](const auto& c, const uint8_t* codes, size_t start, size_t g) {
                       AxpyLoop(c, codes, a, g, acc + start);
                     });
    return;
  }
  VisitCodec(dtype, scale, [&](const auto& c) { AxpyLoop(c, data, a, n, acc); });
}

}  // namespace

RowCodecKernels GetRowCodecKernels() {
  return {hwy::TargetName(HWY_TARGET), HWY_TARGET, &EncodeRowT, &DecodeRowT, &DotRowT, &AxpyRowT};
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(GetRowCodecKernels);

const RowCodecKernels& DefaultRowCodecKernels() {
  static const RowCodecKernels kernels = HWY_DYNAMIC_DISPATCH(GetRowCodecKernels)();
  return kernels;
}

std::vector<RowCodecKernels> AvailableRowCodecKernels() {
  // Highway's documented way to reach one target: pretend the CPU supports only it. Process-wide
  // while it lasts, hence "tests and benchmarks only" in codec.h.
  std::vector<RowCodecKernels> all;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    all.push_back(HWY_DYNAMIC_DISPATCH(GetRowCodecKernels)());
  }
  hwy::SetSupportedTargetsForTest(0);
  return all;
}

void EncodeRow(KvDtype dtype, const float* x, int n, uint8_t* data, uint8_t* scale) {
  KV_DCHECK(n >= 1);
  DefaultRowCodecKernels().encode(dtype, x, n, data, scale);
}

void DecodeRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n, float* out) {
  KV_DCHECK(n >= 1);
  DefaultRowCodecKernels().decode(dtype, data, scale, n, out);
}

float DotRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, const float* q, int n) {
  KV_DCHECK(n >= 1);
  return DefaultRowCodecKernels().dot(dtype, data, scale, q, n);
}

void AxpyRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, float a, int n, float* acc) {
  KV_DCHECK(n >= 1);
  DefaultRowCodecKernels().axpy(dtype, data, scale, a, n, acc);
}

}  // namespace kvengine
#endif  // HWY_ONCE
