// Per-target float tiles of the SIMD MatMul (matmul_hwy.cc includes this once per Highway
// target through foreach_target.h; not a public header): the element decoders of the weight
// formats, and the R x T tile (FloatTile) whose one pass over the columns computes the dot
// products of R weight rows with T packed tokens, block by column block, with the prefetching
// of its rows or of its share of the next panel (see the top of matmul_hwy.cc).
//
// Its names are file-local (an anonymous namespace, as they were inside matmul_hwy.cc): this
// header has exactly one includer per target, and internal linkage leaves the generated code as
// it was before the split.

#if defined(KVENGINE_KERNELS_MATMUL_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_KERNELS_MATMUL_TILES_INL_H_
#undef KVENGINE_KERNELS_MATMUL_TILES_INL_H_
#else
#define KVENGINE_KERNELS_MATMUL_TILES_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/checked_math.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "quant/codec_simd-inl.h"
#include "quant/weight_view.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

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
// along its own rows (they stream from memory), or a span of other bytes (its share of the next
// panel, loaded into cache while this pass computes from cache), spread evenly over its loop.
enum class Prefetch { kNone, kAhead, kOther };

// The bytes [begin, begin + bytes) that a tile prefetches (Prefetch::kOther).
struct PrefetchSpan {
  const uint8_t* begin = nullptr;
  size_t bytes = 0;
};

// A row tile's share of the next panel (Prefetch::kOther): the panel is rows [next_row, next_row +
// next_rows) of each column block, a block's part cut into `count` equal chunks, of which the
// tile prefetches chunk `index` while it computes that block.
struct PanelShare {
  int64_t next_row = 0;
  int64_t next_rows = 0;
  size_t index = 0;
  size_t count = 1;
};

// The chunk of column block b that `share` prefetches. (For ggml rows, one block: the panel's
// rows are one run of bytes.)
HWY_INLINE PrefetchSpan SpanOf(const ColumnBlockView& b, const PanelShare& share) {
  const size_t total = static_cast<size_t>(share.next_rows) * b.stride;
  const size_t chunk = CeilDiv(total, share.count);
  return {b.base + static_cast<size_t>(share.next_row) * b.stride + share.index * chunk, chunk};
}

// Accumulators of an R x T tile: acc[r][t] holds row r's dot product with token t in lanes.
template <size_t R, size_t T>
using TileAcc = VF[R][T];

template <size_t R, size_t T>
HWY_INLINE void ZeroTile(TileAcc<R, T>& acc) {
  for (size_t r = 0; r < R; ++r) {
    for (size_t t = 0; t < T; ++t) acc[r][t] = hn::Zero(DF());
  }
}

// out[r][t] = the sum of acc[r][t]'s lanes.
template <size_t R, size_t T>
HWY_INLINE void ReduceTile(TileAcc<R, T>& acc, float (&out)[R][T]) {
  for (size_t r = 0; r < R; ++r) {
    for (size_t t = 0; t < T; ++t) out[r][t] = hn::GetLane(hn::SumOfLanes(DF(), acc[r][t]));
  }
}

template <class W>
struct FloatTile {
  // acc[r][t] += the products of the `full` whole vectors at rows[r] with token t's vectors at
  // xp, packed by PackTokenTile (vector v of token t at (v * T + t) * lanes). The weights of each
  // vector are decoded first, then each token's vector is loaded once and used by the R rows.
  template <size_t R, size_t T, Prefetch P>
  static HWY_INLINE void Full(const uint8_t* const* rows, PrefetchSpan span, const float* xp,
                              size_t full, TileAcc<R, T>& acc) {
    const DF df;
    const size_t lanes = hn::Lanes(df);
    // Prefetch::kOther: kSpanPrefetches addresses per vector, evenly spaced over the span. A
    // tile's span is at most R rows' bytes (TokenTileOverRows), so with columns a multiple of the
    // lanes the addresses are at most 64 bytes apart and touch every line of it.
    constexpr size_t kSpanPrefetches = (R * hn::MaxLanes(DF()) * W::kBytes + 63) / 64;
    const size_t pf_stride = CeilDiv(span.bytes, std::max<size_t>(1, full * kSpanPrefetches));
    for (size_t v = 0; v < full; ++v, xp += T * lanes) {
      const size_t c = v * lanes;
      if constexpr (P == Prefetch::kOther) {
        for (size_t j = 0; j < kSpanPrefetches; ++j) {
          hwy::Prefetch(span.begin + (v * kSpanPrefetches + j) * pf_stride);
        }
      }
      VF wv[R];
      for (size_t r = 0; r < R; ++r) {
        if constexpr (P == Prefetch::kAhead) {
          hwy::Prefetch(rows[r] + kPrefetchBytes + c * W::kBytes);
        }
        wv[r] = W::Decode(rows[r] + c * W::kBytes);
      }
      for (size_t t = 0; t < T; ++t) {
        const VF xv = hn::Load(df, xp + t * lanes);
        for (size_t r = 0; r < R; ++r) acc[r][t] = hn::MulAdd(wv[r], xv, acc[r][t]);
      }
    }
  }

  // acc[r][t] += the partial vector of rem < lanes elements at rows[r] (the weights zero-padded
  // here, the activations at xp by PackTokenTile) times token t's.
  template <size_t R, size_t T>
  static HWY_INLINE void Partial(const uint8_t* const* rows, const float* xp, size_t rem,
                                 TileAcc<R, T>& acc) {
    const DF df;
    const size_t lanes = hn::Lanes(df);
    VF wv[R];
    for (size_t r = 0; r < R; ++r) {
      HWY_ALIGN uint8_t wpad[kMaxLanes * W::kBytes] = {};
      std::memcpy(wpad, rows[r], rem * W::kBytes);
      wv[r] = W::Decode(wpad);
    }
    for (size_t t = 0; t < T; ++t) {
      const VF xv = hn::Load(df, xp + t * lanes);
      for (size_t r = 0; r < R; ++r) acc[r][t] = hn::MulAdd(wv[r], xv, acc[r][t]);
    }
  }

  // acc[r][t] += rows index[r] of column block b times token t, for the tile's activations at
  // xp (packed over all of w's columns): b's whole vectors, then its partial one (only the last
  // block can have one: the others are whole multiples of kColumnBlockAlign).
  template <size_t R, size_t T, Prefetch P>
  static HWY_INLINE void Block(const ColumnBlockView& b, const int64_t (&index)[R],
                               PrefetchSpan span, const float* xp, TileAcc<R, T>& acc) {
    const size_t lanes = hn::Lanes(DF());
    const uint8_t* rows[R];
    for (size_t r = 0; r < R; ++r) rows[r] = b.base + static_cast<size_t>(index[r]) * b.stride;
    const size_t width = static_cast<size_t>(b.width);
    const size_t full = width / lanes;
    const float* bx = xp + static_cast<size_t>(b.c0) / lanes * T * lanes;
    Full<R, T, P>(rows, span, bx, full, acc);
    if (full * lanes < width) {
      for (size_t r = 0; r < R; ++r) rows[r] += full * lanes * W::kBytes;
      Partial<R, T>(rows, bx + full * T * lanes, width - full * lanes, acc);
    }
  }

  // out[r][t] = dot(row index[r] of w, token t) over every column block, in column order.
  template <size_t R, size_t T, Prefetch P>
  static void Run(const WeightView& w, const int64_t (&index)[R], const PanelShare& share,
                  const float* xp, float (&out)[R][T]) {
    TileAcc<R, T> acc;
    ZeroTile<R, T>(acc);
    const int64_t blocks = NumColumnBlocks(w);
    for (int64_t j = 0; j < blocks; ++j) {
      const ColumnBlockView b = ColumnBlockOf(w, j);
      Block<R, T, P>(b, index, P == Prefetch::kOther ? SpanOf(b, share) : PrefetchSpan(), xp, acc);
    }
    ReduceTile<R, T>(acc, out);
  }
};

}  // namespace
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
