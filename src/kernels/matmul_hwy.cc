// SIMD weight kernels (MatMul rows, DequantizeRow), compiled once per Highway target.
//
// Shape of MatMul: output rows are taken kRowTile at a time and tokens kTokenTile at a time; one
// "tile" call computes the kRowTile x T dot products of those rows and tokens in a single pass
// over the columns, so every decoded weight vector is used T times and every activation vector
// kRowTile times. Rows are taken a panel (kPanelBytes of weights) at a time, and every token tile
// passes over a panel while it sits in L2, so each weight byte is read from memory once per call
// (per token block of up to 366 tokens) however many tokens there are; the panel's last pass
// prefetches the next panel. A decode batch (1-3 tokens) streams its rows as four long runs side
// by side instead (DecodeStreams).
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
#include <type_traits>

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
// use 4 x 2. On Zen 5, 4 x 6 reaches 123 GFLOPS per thread at 16 tokens (F16), 4 x 4 89; the
// machine's FMA peak is 220 GFLOPS per core.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kTokenTile = 6;
#else
constexpr size_t kTokenTile = 2;
#endif
// Weight bytes of one panel of rows (MatMulLoop): they stay in L2 beside a token tile's activations
// (6 x 5632 floats = 132 KiB for a down projection) while every token tile passes over them.
constexpr size_t kPanelBytes = 256 * 1024;
// Token-tile passes over one panel at most (a token block: kMaxTokenPasses - 3 full tiles plus
// the 4/2/1 tail tiles).
constexpr size_t kMaxTokenPasses = 64;
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

// Where a tile's loop prefetches: nowhere (its rows are in cache already), kPrefetchBytes ahead
// along its own rows (they stream from memory), or along other rows (the next panel's, loaded
// into cache while this pass computes from cache). pf[r] is the address prefetched with row r's
// first vector; later vectors prefetch at the same offset from it.
enum class Prefetch { kNone, kAhead, kOther };

template <class W>
struct FloatTile {
  template <size_t R, size_t T, Prefetch P>
  static void Run(const uint8_t* const* rows, const uint8_t* const* pf, const float* const* xs,
                  size_t cols, float (&out)[R][T]) {
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
        if constexpr (P != Prefetch::kNone) hwy::Prefetch(pf[r] + c * W::kBytes);
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

// ------------------------------ the loop over panels, token tiles and row tiles.

// R row pointers for the tile at row r0 of [.., row_end): rows past the end repeat the last row.
template <size_t R>
HWY_INLINE size_t TileRows(const WeightView& w, int64_t r0, int64_t row_end,
                           const uint8_t* (&rows)[R]) {
  const size_t valid = static_cast<size_t>(std::min<int64_t>(R, row_end - r0));
  for (size_t r = 0; r < R; ++r) {
    const int64_t row = r0 + static_cast<int64_t>(std::min(r, valid - 1));
    rows[r] = w.data + static_cast<size_t>(row) * w.row_bytes;
  }
  return valid;
}

// Tokens [t, t + T) against rows [row_begin, row_end) in tiles of R. With P == kOther, the tile at
// row r0 prefetches the same rows of the panel that starts at next_panel (clamped to row_end_all).
template <class Tile, size_t R, size_t T, Prefetch P>
HWY_INLINE void TokenTileOverRows(const WeightView& w, const float* x, int64_t t, int64_t row_begin,
                                  int64_t row_end, int64_t next_panel, int64_t row_end_all,
                                  float* y) {
  const size_t cols = static_cast<size_t>(w.cols);
  const float* xs[T];
  for (size_t i = 0; i < T; ++i) {
    xs[i] = x + (t + static_cast<int64_t>(i)) * static_cast<int64_t>(cols);
  }
  for (int64_t r0 = row_begin; r0 < row_end; r0 += static_cast<int64_t>(R)) {
    const uint8_t* rows[R];
    const size_t valid = TileRows<R>(w, r0, row_end, rows);
    const uint8_t* pf[R];
    for (size_t r = 0; r < R; ++r) {
      if constexpr (P == Prefetch::kAhead) pf[r] = rows[r] + kPrefetchBytes;
      if constexpr (P == Prefetch::kOther) {
        const int64_t next = std::min(next_panel + (r0 - row_begin) + static_cast<int64_t>(r),
                                      row_end_all - 1);
        pf[r] = w.data + static_cast<size_t>(next) * w.row_bytes;
      }
      if constexpr (P == Prefetch::kNone) pf[r] = nullptr;
    }
    float out[R][T];
    Tile::template Run<R, T, P>(rows, pf, xs, cols, out);
    for (size_t i = 0; i < T; ++i) {
      float* yt = y + (t + static_cast<int64_t>(i)) * w.rows + r0;
      for (size_t r = 0; r < valid; ++r) yt[r] = out[r][i];
    }
  }
}

// Every token of [0, n_tokens) against one panel of rows [row_begin, row_end), a token tile at a
// time (kTokenTile, then 4, 2 and 1 for the tail), each pass over all of the panel's rows. The
// first pass reads the panel from memory (prefetching ahead along its rows); later passes find it
// in L2; the last pass prefetches the next panel, [row_end, row_end_all), so that its first pass
// finds it in cache too.
template <class Tile, size_t R>
HWY_INLINE void PanelPasses(const WeightView& w, const float* x, int64_t n_tokens,
                            int64_t row_begin, int64_t row_end, int64_t row_end_all, float* y) {
  int64_t starts[kMaxTokenPasses];
  size_t tiles[kMaxTokenPasses];
  size_t n = 0;
  int64_t t = 0;
  for (; t + static_cast<int64_t>(kTokenTile) <= n_tokens; t += kTokenTile) {
    starts[n] = t;
    tiles[n++] = kTokenTile;
  }
  for (const size_t tail : {size_t{4}, size_t{2}, size_t{1}}) {
    if (tail < kTokenTile && t + static_cast<int64_t>(tail) <= n_tokens) {
      starts[n] = t;
      tiles[n++] = tail;
      t += static_cast<int64_t>(tail);
    }
  }
  const bool has_next = row_end < row_end_all;
  for (size_t i = 0; i < n; ++i) {
    // The first pass streams the panel from memory unless the previous panel's last pass
    // prefetched it (every panel but the call's first).
    const Prefetch p = (i + 1 == n && has_next && n > 1) ? Prefetch::kOther
                       : (i == 0)                         ? Prefetch::kAhead
                                                          : Prefetch::kNone;
    const auto run = [&](auto tile) {
      constexpr size_t T = decltype(tile)::value;
      switch (p) {
        case Prefetch::kNone:
          return TokenTileOverRows<Tile, R, T, Prefetch::kNone>(w, x, starts[i], row_begin, row_end,
                                                               row_end, row_end_all, y);
        case Prefetch::kAhead:
          return TokenTileOverRows<Tile, R, T, Prefetch::kAhead>(w, x, starts[i], row_begin,
                                                                row_end, row_end, row_end_all, y);
        case Prefetch::kOther:
          return TokenTileOverRows<Tile, R, T, Prefetch::kOther>(w, x, starts[i], row_begin,
                                                                row_end, row_end, row_end_all, y);
      }
    };
    if (tiles[i] == kTokenTile) {
      run(std::integral_constant<size_t, kTokenTile>());
    } else if (tiles[i] == 4) {
      if constexpr (kTokenTile > 4) run(std::integral_constant<size_t, 4>());
    } else if (tiles[i] == 2) {
      if constexpr (kTokenTile > 2) run(std::integral_constant<size_t, 2>());
    } else {
      run(std::integral_constant<size_t, 1>());
    }
  }
}

// Decode (T < 4 tokens): the rows [row_begin, row_end) as kDecodeStreams contiguous runs walked
// side by side, one row of each run per tile. A dot product is one chain of dependent multiply-adds
// (a 4 KiB F16 row: 128 of them), and one chain at a time is bound by the FMA's latency (~28 GB/s
// of F16 per core on Zen 5, below the memory's read bandwidth once two cores stream); the tile
// keeps kDecodeStreams chains in flight, each still in the order of the top of this file, while
// the memory system sees a few long sequential streams (adjacent rows interleaved, 4 KiB apart,
// read at half the speed). kernels_bench BM_MatMulDecodeInCache: 1 / 2 / 4 / 6 / 8 runs
// 28 / 44-52 / 80-82 / 80-87 / 84-87 GB/s per thread from L2.
constexpr size_t kDecodeStreams = 4;

template <class Tile, size_t T>
HWY_INLINE void DecodeStreams(const WeightView& w, const float* x, int64_t row_begin,
                              int64_t row_end, float* y) {
  constexpr size_t S = kDecodeStreams;
  const size_t cols = static_cast<size_t>(w.cols);
  const float* xs[T];
  for (size_t i = 0; i < T; ++i) xs[i] = x + static_cast<int64_t>(i) * static_cast<int64_t>(cols);
  const int64_t n = row_end - row_begin;
  const int64_t per = (n + static_cast<int64_t>(S) - 1) / static_cast<int64_t>(S);
  for (int64_t k = 0; k < per; ++k) {
    const uint8_t* rows[S];
    int64_t index[S];
    size_t valid = 0;
    for (size_t s = 0; s < S; ++s) {
      const int64_t row = row_begin + static_cast<int64_t>(s) * per + k;
      if (row < row_end) index[valid++] = row;
    }
    for (size_t s = 0; s < S; ++s) {
      rows[s] = w.data + static_cast<size_t>(index[std::min(s, valid - 1)]) * w.row_bytes;
    }
    float out[S][T];
    Tile::template Run<S, T, Prefetch::kNone>(rows, rows, xs, cols, out);
    for (size_t s = 0; s < valid; ++s) {
      for (size_t i = 0; i < T; ++i) y[static_cast<int64_t>(i) * w.rows + index[s]] = out[s][i];
    }
  }
}

template <class Tile>
void MatMulLoop(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y) {
  // A decode step of one or a few tokens is bound by weight bandwidth (DecodeStreams). More
  // tokens are bound by arithmetic, where kRowTile rows share each activation load. The tile
  // shape never changes a result's bits (see the top of this file).
  if (n_tokens < 4) {  // Fewer tokens than the smallest multi-row tile worth its loads.
    const auto pass = [&](auto tile) {
      DecodeStreams<Tile, decltype(tile)::value>(w, x, row_begin, row_end, y);
    };
    if (n_tokens == 1) return pass(std::integral_constant<size_t, 1>());
    if (n_tokens == 2) return pass(std::integral_constant<size_t, 2>());
    return pass(std::integral_constant<size_t, 3>());
  }
  // Rows are taken a panel at a time and every token passes over a panel before the next one is
  // read, so each weight byte comes from memory once per call whatever n_tokens is. Token blocks
  // bound the number of passes per panel (kMaxTokenPasses) and the activations one panel re-reads.
  const size_t fit = kPanelBytes / static_cast<size_t>(w.row_bytes);
  const int64_t panel = static_cast<int64_t>(std::max(kRowTile, fit - fit % kRowTile));
  constexpr int64_t kBlock = static_cast<int64_t>(kTokenTile * (kMaxTokenPasses - 3));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kBlock) {
    const int64_t nt = std::min(kBlock, n_tokens - t0);
    const float* xb = x + t0 * w.cols;
    float* yb = y + t0 * w.rows;
    for (int64_t p0 = row_begin; p0 < row_end; p0 += panel) {
      PanelPasses<Tile, kRowTile>(w, xb, nt, p0, std::min(row_end, p0 + panel), row_end, yb);
    }
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
