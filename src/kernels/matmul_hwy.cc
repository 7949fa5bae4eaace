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
// then by one zero-padded partial vector when cols % L != 0 (float formats; quantized rows are
// whole blocks of 32 or 256, a multiple of every L), and is reduced by SumOfLanes. Block formats
// other than Q8_0 are first decoded, one block of each row at a time, into a small float buffer,
// exactly (bit-identical to DequantizeRow); activations are never quantized. That sequence is the same in
// every tile shape, so which tile (or thread) computed a dot product cannot change its bits. Rows
// past the end of a tile are computed on a copy of the last row pointer and discarded.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/kernel_registry.h"
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

struct Q8Tile {
  template <size_t R, size_t T>
  static void Run(const uint8_t* const* rows, const float* const* xs, size_t cols,
                  float (&out)[R][T]) {
    const DF df;
    const size_t lanes = hn::Lanes(df);
    constexpr size_t kBlock = static_cast<size_t>(kQ8_0BlockElements);
    VF acc[R][T];
    for (size_t r = 0; r < R; ++r) {
      for (size_t t = 0; t < T; ++t) acc[r][t] = hn::Zero(df);
    }
    for (size_t b = 0; b < cols / kBlock; ++b) {
      VF scale[R];
      const uint8_t* codes[R];
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* block = rows[r] + b * kQ8_0BlockBytes;
        scale[r] = hn::Set(df, LoadHalf(block));
        codes[r] = block + 2;
      }
      for (size_t j = 0; j < kBlock; j += lanes) {
        VF xv[T];
        for (size_t t = 0; t < T; ++t) xv[t] = hn::LoadU(df, xs[t] + b * kBlock + j);
        for (size_t r = 0; r < R; ++r) {
          const VF wv = DecodeQ8(codes[r] + j, scale[r]);
          for (size_t t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(wv, xv[t], acc[r][t]);
        }
      }
    }
    for (size_t r = 0; r < R; ++r) {
      for (size_t t = 0; t < T; ++t) out[r][t] = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
    }
  }
};

// The block-quantized formats (B: a decoder of dequant_simd-inl.h): each block of each row is
// decoded exactly into `decoded`, then multiplied in as a float row would be. The accumulation
// sequence is that of FloatTile (one MulAdd per L columns, in column order; blocks are multiples
// of every L), so the tile shape cannot change a result's bits.
template <class B>
struct BlockTile {
  static_assert(B::kElements % kMaxLanes == 0, "a vector must not straddle two blocks");
  template <size_t R, size_t T>
  static void Run(const uint8_t* const* rows, const float* const* xs, size_t cols,
                  float (&out)[R][T]) {
    const DF df;
    const size_t lanes = hn::Lanes(df);
    VF acc[R][T];
    for (size_t r = 0; r < R; ++r) {
      for (size_t t = 0; t < T; ++t) acc[r][t] = hn::Zero(df);
    }
    HWY_ALIGN float decoded[R][B::kElements];  // Row r's current block, decoded.
    for (size_t b = 0; b < cols / B::kElements; ++b) {
      for (size_t r = 0; r < R; ++r) {
        if constexpr (R > 1) hwy::Prefetch(rows[r] + b * B::kBytes + kPrefetchBytes);
        B::Decode(rows[r] + b * B::kBytes, decoded[r]);
      }
      const size_t c0 = b * B::kElements;
      for (size_t j = 0; j < B::kElements; j += lanes) {
        VF xv[T];
        for (size_t t = 0; t < T; ++t) xv[t] = hn::LoadU(df, xs[t] + c0 + j);
        for (size_t r = 0; r < R; ++r) {
          const VF wv = hn::Load(df, decoded[r] + j);
          for (size_t t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(wv, xv[t], acc[r][t]);
        }
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
      KV_DCHECK(w.cols % kQ8_0BlockElements == 0);
      return MatMulLoop<Q8Tile>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ4_0:
      return MatMulLoop<BlockTile<Q4_0Block>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ4_1:
      return MatMulLoop<BlockTile<Q4_1Block>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ5_0:
      return MatMulLoop<BlockTile<Q5_0Block>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ5_1:
      return MatMulLoop<BlockTile<Q5_1Block>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ4_K:
      return MatMulLoop<BlockTile<Q4_KBlock>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ5_K:
      return MatMulLoop<BlockTile<Q5_KBlock>>(w, x, n_tokens, row_begin, row_end, y);
    case WeightFormat::kQ6_K:
      return MatMulLoop<BlockTile<Q6_KBlock>>(w, x, n_tokens, row_begin, row_end, y);
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
