// SIMD weight kernels (MatMul rows, DequantizeRow), compiled once per Highway target.
//
// Shape of MatMul: output rows are taken kRowTile at a time and tokens kTokenTile at a time; one
// "tile" call computes the kRowTile x T dot products of those rows and tokens in a single pass
// over the columns, so every decoded weight vector is used T times and every activation vector
// kRowTile times. Tokens are grouped into blocks whose activations fit in L2, and each block makes
// one pass over the weight rows; a decode batch (a few tokens) therefore reads each weight once.
//
// Batch invariance (matmul.h): each dot product owns one vector accumulator, updated by
//   acc = MulAdd(w[c .. c + L), x[c .. c + L), acc)   for c = 0, L, 2L, ... (L = lanes),
// then by one zero-padded partial vector when cols % L != 0, and is reduced by SumOfLanes. That
// sequence is the same in every tile shape, so which tile (or thread) computed a dot product
// cannot change its bits. Rows past the end of a tile are computed on a copy of the last row
// pointer and discarded. These tiles serve the float formats (F32, F16, BF16).
//
// The block-quantized formats (Q8_0, Q4_0 ... Q6_K) multiply quantized activations instead, as
// llama.cpp does (quant_dot.h): integer products per block, each (row, token) result a function
// of that row and that token's activations only, whatever the batch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/kernel_ref.h"
#include "kernels/kernel_registry.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_dot_x86.h"
#include "kernels/weight_view.h"
#include "kernels/dequant_simd-inl.h"
#include "quant/codec_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

constexpr size_t kRowTile = 4;
// Accumulators per tile: kRowTile * kTokenTile vectors, plus kTokenTile activation vectors and one
// weight vector. 4 x 6 (24 + 6 + 1 = 31) fits AVX-512's 32 registers; targets with 16 registers
// use 4 x 2. On Zen 4, 4 x 6 reaches 123 GFLOPS per thread at 16 tokens (F16), 4 x 4 89.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kTokenTile = 6;
#else
constexpr size_t kTokenTile = 2;
#endif
// Activations of one token block (block tokens x cols floats) stay within this many bytes, so they
// remain in L2 while every row tile of the call streams past them.
constexpr size_t kActivationBlockBytes = 256 * 1024;
constexpr size_t kMaxTokenBlock = 256;
// Software prefetch distance along each weight row (a prefetch past the row's end is harmless).
constexpr size_t kPrefetchBytes = 1024;

// ------------------------------ element decoders of the float formats: L elements at p.

struct F32Weights {
  static constexpr size_t kBytes = 4;
  static VF Decode(const uint8_t* p) { return LoadBytes(DF(), p); }
};
struct F16Weights {
  static constexpr size_t kBytes = 2;
  static VF Decode(const uint8_t* p) { return DecodeF16(p); }
};
struct Bf16Weights {
  static constexpr size_t kBytes = 2;
  static VF Decode(const uint8_t* p) { return DecodeBf16(p); }
};

// Q8_0: the L int8 codes at q times the block scale d.
HWY_INLINE VF DecodeQ8(const uint8_t* q, VF d) {
  const hn::Rebind<int8_t, DF> d8;
  const auto codes = hn::PromoteTo(DI32(), hn::LoadU(d8, reinterpret_cast<const int8_t*>(q)));
  return hn::Mul(hn::ConvertTo(DF(), codes), d);
}

// ------------------------------ tiles: out[r][t] = dot(row r, token t), R rows x T tokens.

template <class W>
struct FloatTile {
  template <size_t R, size_t T>
  static void Run(const uint8_t* const* rows, const float* const* xs, size_t cols,
                  float (&out)[R][T]) {
    const DF df;
    const size_t lanes = hn::Lanes(df);
    VF acc[R][T];
    for (size_t r = 0; r < R; ++r) {
      for (size_t t = 0; t < T; ++t) acc[r][t] = hn::Zero(df);
    }
    size_t c = 0;
    for (; c + lanes <= cols; c += lanes) {
      VF xv[T];
      for (size_t t = 0; t < T; ++t) xv[t] = hn::LoadU(df, xs[t] + c);
      for (size_t r = 0; r < R; ++r) {
        // One row at a time is a single sequential stream the hardware prefetcher follows alone.
        if constexpr (R > 1) hwy::Prefetch(rows[r] + c * W::kBytes + kPrefetchBytes);
        const VF wv = W::Decode(rows[r] + c * W::kBytes);
        for (size_t t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(wv, xv[t], acc[r][t]);
      }
    }
    if (c < cols) {  // Partial vector: weights and activations zero-padded, so padding adds 0.
      const size_t rem = cols - c;
      HWY_ALIGN float xpad[T][kMaxLanes] = {};
      for (size_t t = 0; t < T; ++t) std::memcpy(xpad[t], xs[t] + c, rem * sizeof(float));
      for (size_t r = 0; r < R; ++r) {
        HWY_ALIGN uint8_t wpad[kMaxLanes * W::kBytes] = {};
        std::memcpy(wpad, rows[r] + c * W::kBytes, rem * W::kBytes);
        const VF wv = W::Decode(wpad);
        for (size_t t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(wv, hn::Load(df, xpad[t]), acc[r][t]);
      }
    }
    for (size_t r = 0; r < R; ++r) {
      for (size_t t = 0; t < T; ++t) out[r][t] = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
    }
  }
};

// ------------------------------ the loop over token blocks, row tiles and token tiles.

// Tokens [t, t + T) against the row tile at `rows` (R pointers, the last `valid_rows` of which
// may repeat a real row); writes the valid rows' results.
template <class Tile, size_t R, size_t T>
HWY_INLINE void RunTile(const uint8_t* const* rows, size_t valid_rows, const float* x, size_t cols,
                        int64_t t, int64_t y_stride, int64_t r0, float* y) {
  const float* xs[T];
  for (size_t i = 0; i < T; ++i) {
    xs[i] = x + (t + static_cast<int64_t>(i)) * static_cast<int64_t>(cols);
  }
  float out[R][T];
  Tile::template Run<R, T>(rows, xs, cols, out);
  for (size_t i = 0; i < T; ++i) {
    float* yt = y + (t + static_cast<int64_t>(i)) * y_stride + r0;
    for (size_t r = 0; r < valid_rows; ++r) yt[r] = out[r][i];
  }
}

// Rows r0 .. row_end in tiles of R, for tokens [t0, t1) in token tiles of kTokenTile, 4, 2 and 1.
template <class Tile, size_t R>
HWY_INLINE void RowTiles(const WeightView& w, const float* x, int64_t t0, int64_t t1,
                         int64_t row_begin, int64_t row_end, float* y) {
  const size_t cols = static_cast<size_t>(w.cols);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += static_cast<int64_t>(R)) {
    const size_t valid = static_cast<size_t>(std::min<int64_t>(R, row_end - r0));
    const uint8_t* rows[R];
    for (size_t r = 0; r < R; ++r) {
      const int64_t row = r0 + static_cast<int64_t>(std::min(r, valid - 1));
      rows[r] = w.data + static_cast<size_t>(row) * w.row_bytes;
    }
    int64_t t = t0;
    for (; t + static_cast<int64_t>(kTokenTile) <= t1; t += kTokenTile) {
      RunTile<Tile, R, kTokenTile>(rows, valid, x, cols, t, w.rows, r0, y);
    }
    if constexpr (kTokenTile > 4) {
      if (t + 4 <= t1) {
        RunTile<Tile, R, 4>(rows, valid, x, cols, t, w.rows, r0, y);
        t += 4;
      }
    }
    if constexpr (kTokenTile > 2) {
      if (t + 2 <= t1) {
        RunTile<Tile, R, 2>(rows, valid, x, cols, t, w.rows, r0, y);
        t += 2;
      }
    }
    if (t < t1) RunTile<Tile, R, 1>(rows, valid, x, cols, t, w.rows, r0, y);
  }
}

template <class Tile>
void MatMulLoop(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y) {
  const size_t cols = static_cast<size_t>(w.cols);
  // A decode step of one or a few tokens is bound by weight bandwidth, and on the reference
  // machine (Zen 4) one weight row streamed at a time reads twice as fast as kRowTile rows
  // interleaved (20.8 vs 10.7 GB/s, one thread, F16, huge pages). More tokens are bound by
  // arithmetic, where kRowTile rows share each activation load. The tile shape never changes a
  // result's bits (see the top of this file).
  if (n_tokens < 4) {  // Fewer tokens than the smallest multi-row tile worth its loads.
    return RowTiles<Tile, 1>(w, x, 0, n_tokens, row_begin, row_end, y);
  }
  const size_t fit = kActivationBlockBytes / (cols * sizeof(float));
  const int64_t block =
      static_cast<int64_t>(std::clamp(fit - fit % kTokenTile, kTokenTile, kMaxTokenBlock));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += block) {
    RowTiles<Tile, kRowTile>(w, x, t0, std::min(n_tokens, t0 + block), row_begin, row_end, y);
  }
}

// The quantized dot products of this target (quant_dot.h): the x86 kernels where the target has
// AVX2 (the VNNI build under AVX3 when the CPU has VNNI), else the scalar reference. All of them
// give the reference's bits, so the choice only changes speed.
kernels_internal::QuantDotTokensFn QuantDotForTarget() {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  static const kernels_internal::QuantDotTokensFn x86 =
      kernels_internal::X86QuantDot(/*allow_vnni=*/HWY_TARGET <= HWY_AVX3);
  if (x86 != nullptr) return x86;
#endif
  return &kernels_ref::QuantDotTokens;
}

void MatMulRowsT(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                 int64_t row_end, float* y) {
  const std::optional<WeightFormat> format = WeightFormatOf(w.type);
  KV_CHECK(format.has_value()) << "no kernel for weight type " << GgmlTypeName(w.type);
  switch (*format) {
    case WeightFormat::kF32:
      return MatMulLoop<FloatTile<F32Weights>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kF16:
      return MatMulLoop<FloatTile<F16Weights>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kBF16:
      return MatMulLoop<FloatTile<Bf16Weights>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ5_0:
    case WeightFormat::kQ5_1:
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K:
      return kernels_internal::QuantMatMulRowsFromFloat(QuantDotForTarget(), w, x, n_tokens,
                                                        row_begin, row_end, y);
  }
}

// ------------------------------ DequantizeRow

template <class W>
void DecodeFloats(const uint8_t* src, size_t n, float* dst) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(W::Decode(src + i * W::kBytes), df, dst + i);
  if (i == n) return;
  HWY_ALIGN uint8_t enc[kMaxLanes * W::kBytes] = {};
  HWY_ALIGN float dec[kMaxLanes];
  std::memcpy(enc, src + i * W::kBytes, (n - i) * W::kBytes);
  hn::Store(W::Decode(enc), df, dec);
  std::memcpy(dst + i, dec, (n - i) * sizeof(float));
}

template <class B>
void DecodeBlocks(GgmlType type, const uint8_t* src, size_t n, float* dst) {
  KV_CHECK(n % B::kElements == 0) << GgmlTypeName(type) << " row of " << n << " elements";
  for (size_t b = 0; b < n / B::kElements; ++b) B::Decode(src + b * B::kBytes, dst + b * B::kElements);
}

void DequantizeRowT(GgmlType type, const uint8_t* src, int64_t n_signed, float* dst) {
  const std::optional<WeightFormat> format = WeightFormatOf(type);
  KV_CHECK(format.has_value()) << "no kernel for weight type " << GgmlTypeName(type);
  const size_t n = static_cast<size_t>(n_signed);
  switch (*format) {
    case WeightFormat::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case WeightFormat::kF16:
      return DecodeFloats<F16Weights>(src, n, dst);
    case WeightFormat::kBF16:
      return DecodeFloats<Bf16Weights>(src, n, dst);
    case WeightFormat::kQ8_0: {
      KV_CHECK(n_signed % kQ8_0BlockElements == 0) << "q8_0 row of " << n_signed << " elements";
      const DF df;
      const size_t lanes = hn::Lanes(df);
      constexpr size_t kBlock = static_cast<size_t>(kQ8_0BlockElements);
      for (size_t b = 0; b < n / kBlock; ++b) {
        const uint8_t* block = src + b * kQ8_0BlockBytes;
        const VF d = hn::Set(df, LoadHalf(block));
        for (size_t j = 0; j < kBlock; j += lanes) {
          hn::StoreU(DecodeQ8(block + 2 + j, d), df, dst + b * kBlock + j);
        }
      }
      return;
    }
    case WeightFormat::kQ4_0:
      return DecodeBlocks<Q4_0Block>(type, src, n, dst);
    case WeightFormat::kQ4_1:
      return DecodeBlocks<Q4_1Block>(type, src, n, dst);
    case WeightFormat::kQ5_0:
      return DecodeBlocks<Q5_0Block>(type, src, n, dst);
    case WeightFormat::kQ5_1:
      return DecodeBlocks<Q5_1Block>(type, src, n, dst);
    case WeightFormat::kQ4_K:
      return DecodeBlocks<Q4_KBlock>(type, src, n, dst);
    case WeightFormat::kQ5_K:
      return DecodeBlocks<Q5_KBlock>(type, src, n, dst);
    case WeightFormat::kQ6_K:
      return DecodeBlocks<Q6_KBlock>(type, src, n, dst);
  }
}

}  // namespace

void FillMatMul(KernelTable* table) {
  table->target_name = hwy::TargetName(HWY_TARGET);
  table->hwy_target = HWY_TARGET;
  table->matmul_rows = &MatMulRowsT;
  table->dequantize_row = &DequantizeRowT;
  table->quant_dot = QuantDotForTarget();
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(FillMatMul);

void kernels_internal::FillMatMulKernels(int64_t hwy_target, KernelTable* table) {
  const auto fill = HWY_DISPATCH_TABLE(FillMatMul)[HwyExportIndex(hwy_target)];
  KV_CHECK(fill != nullptr) << "target " << hwy::TargetName(hwy_target) << " not compiled";
  fill(table);
}

}  // namespace kvengine
#endif  // HWY_ONCE
