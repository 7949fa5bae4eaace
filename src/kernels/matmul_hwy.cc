// SIMD weight kernels (MatMul rows, DequantizeRow), compiled once per Highway target.
//
// Shape of MatMul: tokens are taken a token tile at a time (kTokenTiles: 6 on AVX-512) and
// output rows a few at a time (the tile's R, 4); one tile call computes the R x T dot products of
// those rows and tokens in a single pass over the columns, so every decoded weight vector is used
// T times and every activation vector R times. Rows are taken a panel (kPanelBytes of weights) at
// a time, and every token tile passes over a panel while it sits in L2, so each weight byte is
// read from memory once per block of kBlockTokens tokens however many tokens there are; the
// panel's passes share the prefetch of the next panel. A batch of up to kMaxStreamTokens tokens
// (3; 6 on AVX-512: one token tile, which a panel would not reuse) streams its rows as four long
// runs side by side instead (DecodeStreams).
//
// A matrix stored in column blocks (WeightView::col_block, weight_view.h) is walked block by
// block: DecodeStreams takes one block of every row before the next (only that block's
// activations in L1; each row's accumulators saved between blocks), and a token tile runs the
// blocks in turn with its accumulators in registers. Either way each dot product is the same
// sequence of multiply-adds as over ggml rows.
//
// Batch invariance (matmul.h): each dot product owns one vector accumulator, updated by
//   acc = MulAdd(w[c .. c + L), x[c .. c + L), acc)   for c = 0, L, 2L, ... (L = lanes),
// then by one zero-padded partial vector when cols % L != 0, and is reduced by SumOfLanes. That
// sequence is the same in every tile shape, so which tile (or thread) computed a dot product
// cannot change its bits. Rows past the end of a tile are computed on a copy of the last row
// pointer and discarded. These tiles serve the float formats (F32, F16, BF16); the tile
// (FloatTile) and the formats' element decoders are matmul_tiles-inl.h's.
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
#include <iterator>
#include <type_traits>

#include "base/check.h"
#include "base/checked_math.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "quant/dequant_simd-inl.h"
#include "kernels/kernel_ref.h"
#include "kernels/kernel_registry.h"
#include "kernels/matmul_tiles-inl.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_dot_x86.h"
#include "quant/weight_view.h"
#include "quant/codec_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

// Token tiles: the tokens of one pass over a panel of rows, taken kRowTile (R) rows at a time.
// A tile holds R x T accumulators, R decoded weight vectors and one activation vector in
// registers; each decoded weight vector is used T times, each activation vector R times. The
// activations come packed (PackTokenTile): one pointer and constant offsets reach every token's
// vector, so no per-token pointer competes for the general registers or reloads from the
// stack. On the Intel AVX-512 VM of BENCHMARKS.md the packed 4 x 6 tile ran 5-25% faster than
// the same tile over per-token pointers (kernels_microbench BM_MatMulShape). Longer token tiles
// (1 x 16, 2 x 8, 2 x 12, each decoded weight used more often) ran no faster there once the
// activations came from L2 rather than L1, with or without blocking the columns so that they
// stay in L1.
//
// kRowTile: rows per tile, every token tile's R, and the unit that panels are rounded to.
// kTokenTiles: the token counts of the tile shapes, largest first.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// 32 vector registers: 4 x 6 (24 + 4 + 1 = 29). On Zen 5, 4 x 6 reached 123 GFLOPS per thread
// at 16 tokens (F16), 4 x 4 89; the machine's FMA peak is 220 GFLOPS per core.
constexpr size_t kRowTile = 4;
constexpr size_t kTokenTiles[] = {6, 4, 2, 1};
#else
// 16 vector registers: 3 x 4 (12 + 3 + 1 = 16). On Zen 3 (AVX2), F16 weights, kernels_microbench
// BM_MatMulShape: 80-91 GFLOPS per thread at 16-512 tokens against 4 x 2's 73-86 (the FMA peak is
// 117); 2 x 6 reached 63-66 (GCC spilled its accumulators).
constexpr size_t kRowTile = 3;
constexpr size_t kTokenTiles[] = {4, 2, 1};
#endif
// Weight bytes of one panel of rows (MatMulLoop): they stay in L2 beside a token tile's packed
// activations (6 x 5632 floats = 132 KiB for a down projection) while every token tile passes
// over them.
constexpr size_t kPanelBytes = 256 * 1024;
// Tokens per block (MatMulLoop): every token of a block passes over a panel before the next
// panel is read, so the weights are read from memory once per block. The block's activations are
// packed once per call into a buffer per thread (192 x 5632 floats on AVX-512: 4.1 MiB).
constexpr int64_t kBlockTokens = 32 * kTokenTiles[0];
// Token-tile passes over one panel at most: the block's full tiles and one tail tile.
constexpr size_t kMaxTokenPasses = size_t(kBlockTokens) / kTokenTiles[0] + 1;

// ------------------------------ the loop over panels, token tiles and row tiles.

// Vectors (of the target's lanes) that cover `cols` elements, the last one zero padded.
HWY_INLINE size_t PackedVectors(size_t cols) {
  return (cols + hn::Lanes(DF()) - 1) / hn::Lanes(DF());
}

// Packs tokens [0, valid) of x (rows of `cols` floats) for a tile of n >= valid tokens: vector v
// of token t at xp + (v * n + t) * lanes, for v < PackedVectors(cols); the lanes past `cols`, and
// tokens [valid, n) (a padded tail tile's), are zero.
HWY_INLINE void PackTokenTile(const float* x, size_t n, size_t valid, size_t cols, float* xp) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const size_t full = cols / lanes;
  for (size_t v = 0; v < full; ++v) {
    for (size_t t = 0; t < valid; ++t) {
      hn::Store(hn::LoadU(df, x + t * cols + v * lanes), df, xp + (v * n + t) * lanes);
    }
    for (size_t t = valid; t < n; ++t) hn::Store(hn::Zero(df), df, xp + (v * n + t) * lanes);
  }
  if (full * lanes == cols) return;
  const size_t rem = cols - full * lanes;
  for (size_t t = 0; t < n; ++t) {
    float* dst = xp + (full * n + t) * lanes;
    hn::Store(hn::Zero(df), df, dst);
    if (t < valid) std::memcpy(dst, x + t * cols + full * lanes, rem * sizeof(float));
  }
}

// The R row indices of the tile at row r0 of [.., row_end): rows past the end repeat the last
// row (computed, then discarded). Returns the valid ones' count.
template <size_t R>
HWY_INLINE size_t TileRows(int64_t r0, int64_t row_end, int64_t (&index)[R]) {
  const size_t valid = static_cast<size_t>(std::min<int64_t>(R, row_end - r0));
  for (size_t r = 0; r < R; ++r) index[r] = r0 + static_cast<int64_t>(std::min(r, valid - 1));
  return valid;
}

// One token tile's pass over rows [row_begin, row_end) in tiles of R: tokens [t, t + T), packed
// at xp. With P == kOther, row tile k (counted from row_begin) prefetches chunk share * tiles + k
// of the panel that starts at next_panel, cut into shares x tiles equal chunks (per column
// block): the `shares` passes over this panel together prefetch all of the next one, each tile an
// equal part.
template <class Tile, size_t R, size_t T, Prefetch P>
HWY_INLINE void TokenTileOverRows(const WeightView& w, const float* xp, int64_t t,
                                  int64_t row_begin, int64_t row_end, int64_t next_panel,
                                  int64_t row_end_all, float* y, int64_t share, int64_t shares,
                                  int64_t t_end) {
  // Prefetch::kOther: the next panel (rows [next_panel, next_panel + this panel's height),
  // clamped to row_end_all) in shares x tiles equal chunks, chunk share * tiles + k for row tile
  // k of this pass.
  const size_t height = static_cast<size_t>(row_end - row_begin);
  const size_t tiles = CeilDiv(height, R);
  PanelShare panel_share;
  panel_share.next_row = next_panel;
  panel_share.next_rows =
      std::min(static_cast<int64_t>(height), std::max<int64_t>(0, row_end_all - next_panel));
  panel_share.count = static_cast<size_t>(shares) * tiles;
  for (int64_t r0 = row_begin, k = 0; r0 < row_end; r0 += static_cast<int64_t>(R), ++k) {
    int64_t index[R];
    const size_t valid = TileRows<R>(r0, row_end, index);
    panel_share.index = static_cast<size_t>(share) * tiles + static_cast<size_t>(k);
    float out[R][T];
    Tile::template Run<R, T, P>(w, index, panel_share, xp, out);
    // A padded tail tile's tokens past t_end are computed on zeros and not written.
    const size_t tokens = static_cast<size_t>(std::min<int64_t>(T, t_end - t));
    for (size_t i = 0; i < tokens; ++i) {
      float* yt = y + (t + static_cast<int64_t>(i)) * w.rows + r0;
      for (size_t r = 0; r < valid; ++r) yt[r] = out[r][i];
    }
  }
}

// A block's token tiles: tile i covers tokens [start[i], start[i] + kTokenTiles[shape[i]]): tiles
// of the largest shape, then the tail in one tile of the smallest shape that holds it. A tail
// tile may be padded: its tokens past `tokens` are zeros whose results are discarded, which
// leaves every real token's bits alone (one accumulator per dot product, see the top of this
// file) and takes one pass over the panel instead of two or three. Alternated with the plan
// before (full tiles of each shape, largest first: 5 = 4 + 1, 11 = 6 + 4 + 1) in one process on
// Zen 4 (F16, 2048 rows, 1 thread): 5 tokens 55 -> 76 GFLOPS, 9 73 -> 83, 11 81 -> 90, 15 84 ->
// 91; tails of 1 unchanged (kernels_microbench, docs/notes/decode-matmul.md).
struct TokenTilePlan {
  size_t n = 0;
  int64_t tokens = 0;  // The block's tokens; the last tile may extend past them (padding).
  int64_t start[kMaxTokenPasses];
  size_t shape[kMaxTokenPasses];
};

TokenTilePlan PlanTokenTiles(int64_t n_tokens) {
  TokenTilePlan plan;
  plan.tokens = n_tokens;
  const int64_t big = static_cast<int64_t>(kTokenTiles[0]);
  int64_t t = 0;
  for (; t + big <= n_tokens; t += big) {
    plan.start[plan.n] = t;
    plan.shape[plan.n++] = 0;
  }
  if (t < n_tokens) {  // The tail: the smallest shape that holds it (kTokenTiles descends).
    size_t s = 0;
    while (s + 1 < std::size(kTokenTiles) &&
           kTokenTiles[s + 1] >= static_cast<size_t>(n_tokens - t)) {
      ++s;
    }
    plan.start[plan.n] = t;
    plan.shape[plan.n++] = s;
  }
  KV_DCHECK(plan.n <= kMaxTokenPasses);
  return plan;
}

// Tokens the plan's tiles cover, its padding included.
int64_t PlannedTokens(const TokenTilePlan& plan) {
  return plan.n == 0
             ? 0
             : plan.start[plan.n - 1] + static_cast<int64_t>(kTokenTiles[plan.shape[plan.n - 1]]);
}

// Calls f(std::integral_constant<size_t, S>) for S == s (a compile-time index of kTokenTiles).
template <size_t S = 0, class F>
HWY_INLINE void WithTileShape(size_t s, const F& f) {
  if constexpr (S < std::size(kTokenTiles)) {
    if (s == S) return f(std::integral_constant<size_t, S>());
    WithTileShape<S + 1>(s, f);
  }
}

// Every token tile of `plan` against one panel of rows [row_begin, row_end), each pass over all
// of the panel's rows; xp holds the block's tokens packed, tile by tile (tile i at
// start[i] * vectors * lanes). The call's first panel comes from memory in its first pass
// (prefetching ahead along its rows); every other pass finds its panel in L2. The passes share
// the prefetch of the next panel, [row_end, row_end_all): every row tile of the `shares` passes
// that take part prefetches an equal chunk of it, spread over its loop, so the memory streams the
// next panel evenly while all of this one's passes compute. Alternated with the previous schedule
// (the last pass alone prefetching the next panel; a single pass only its own rows, 1 KiB ahead)
// in one process on Zen 4 (F16, 2048 rows, best of each): 4 and 6 tokens 46 -> 69 and 61 -> 89
// GFLOPS with 1 thread (82 -> 114, 108 -> 162 with 2); 8 tokens 64 -> 74; 16 tokens 88 -> 91;
// 40-80 tokens 1-3% faster (kernels_microbench, docs/notes/decode-matmul.md). Spreading the
// prefetch over every tile, instead of whole rows of the next panel in every shares-th row tile
// (which then waited on memory: in perf those tiles took 1.4x the time of the others), on Zen 3
// (AVX2, 2048 x 2048, same process, old / new): 16 tokens 38.9-39.9 / 43.1-44.3 G multiply-adds/s
// with 1 thread, 77-78 / 82.7-83.8 with 2; 6 tokens 30.2-30.6 / 32.7-34.7; 80 tokens 2-3% faster; 4
// tokens (one pass, the whole next panel) unchanged. `bench decode` batch 16: 97.8-99.5 ->
// 105.4-107.9 tok/s.
template <class Tile>
HWY_INLINE void PanelPasses(const WeightView& w, const float* xp, const TokenTilePlan& plan,
                            int64_t row_begin, int64_t row_end, int64_t row_end_all, float* y,
                            bool first_panel) {
  const size_t tile_stride = PackedVectors(static_cast<size_t>(w.cols)) * hn::Lanes(DF());
  const bool prefetch_next = row_end < row_end_all;
  // The passes that share the next panel's prefetch: all but the first panel's first pass, which
  // streams its own rows; a single pass (4-6 tokens) always takes the whole next panel, its rows
  // of the call's first panel coming on demand.
  const size_t first_share = first_panel && plan.n > 1 ? 1 : 0;
  const int64_t shares = static_cast<int64_t>(plan.n - first_share);
  for (size_t i = 0; i < plan.n; ++i) {
    Prefetch p = Prefetch::kNone;
    if (prefetch_next) {
      p = i < first_share ? Prefetch::kAhead : Prefetch::kOther;
    } else if (i == 0) {
      p = Prefetch::kAhead;  // The call's last panel: ahead along its own rows.
    }
    const int64_t share = static_cast<int64_t>(i) - static_cast<int64_t>(first_share);
    const float* tile_x = xp + static_cast<size_t>(plan.start[i]) * tile_stride;
    WithTileShape(plan.shape[i], [&](auto shape) {
      constexpr size_t R = kRowTile, T = kTokenTiles[decltype(shape)::value];
      switch (p) {
        case Prefetch::kNone:
          return TokenTileOverRows<Tile, R, T, Prefetch::kNone>(w, tile_x, plan.start[i], row_begin,
                                                                row_end, row_end, row_end_all, y, 0,
                                                                1, plan.tokens);
        case Prefetch::kAhead:
          return TokenTileOverRows<Tile, R, T, Prefetch::kAhead>(w, tile_x, plan.start[i],
                                                                 row_begin, row_end, row_end,
                                                                 row_end_all, y, 0, 1, plan.tokens);
        case Prefetch::kOther:
          return TokenTileOverRows<Tile, R, T, Prefetch::kOther>(
              w, tile_x, plan.start[i], row_begin, row_end, row_end, row_end_all, y, share, shares,
              plan.tokens);
      }
    });
  }
}

// Per-thread scratch: the packed activations of a call, and DecodeStreams' accumulators saved
// between column blocks.
enum class Scratch { kPacked, kSaved };

// A buffer of at least n floats, aligned, one per thread and kind; it grows to the largest n seen.
template <Scratch kKind>
float* ScratchBuffer(size_t n) {
  thread_local hwy::AlignedFreeUniquePtr<float[]> buffer;
  thread_local size_t capacity = 0;
  if (n > capacity) {
    buffer = hwy::AllocateAligned<float>(n);
    KV_CHECK(buffer != nullptr) << "out of memory: " << n << " floats of matmul scratch";
    capacity = n;
  }
  return buffer.get();
}
float* PackBuffer(size_t n) { return ScratchBuffer<Scratch::kPacked>(n); }

// A block's activations packed for its token tiles (PackTokenTile), in PackBuffer.
const float* PackBlock(const float* x, size_t cols, const TokenTilePlan& plan, int64_t n_tokens) {
  const size_t tile_stride = PackedVectors(cols) * hn::Lanes(DF());
  float* xp = PackBuffer(static_cast<size_t>(PlannedTokens(plan)) * tile_stride);
  for (size_t i = 0; i < plan.n; ++i) {
    const size_t start = static_cast<size_t>(plan.start[i]);
    const size_t size = kTokenTiles[plan.shape[i]];
    const size_t valid = std::min(size, static_cast<size_t>(n_tokens) - start);
    PackTokenTile(x + start * cols, size, valid, cols, xp + start * tile_stride);
  }
  return xp;
}

// Decode (T <= kMaxStreamTokens tokens): the rows [row_begin, row_end) as kDecodeStreams
// contiguous runs walked side by side, one row of each run per tile. A dot product is one chain of
// dependent multiply-adds (a 4 KiB F16 row: 128 of them), and one chain at a time is bound by the
// FMA's latency (~28 GB/s of F16 per core on Zen 5, below the memory's read bandwidth once two
// cores stream); the tile keeps kDecodeStreams chains in flight, each still in the order of the
// top of this file, while the memory system sees a few long sequential streams (adjacent rows
// interleaved, 4 KiB apart, read at half the speed). kernels_microbench BM_MatMulDecodeInCache:
// 1 / 2 / 4 / 6 / 8 runs 28 / 44-52 / 80-82 / 80-87 / 84-87 GB/s per thread from L2.
constexpr size_t kDecodeStreams = 4;
// The most tokens DecodeStreams takes: what its S x T accumulators, S weight vectors and an
// activation leave of the registers. AVX-512: 6 (4 x 6 + 4 + 1 = 29 of 32). A batch of 4-6 tokens
// is a single token tile, so the panel loop's weights in L2 serve no second pass, and its software
// prefetch of the next panel streamed slower than the hardware prefetchers follow four runs: on
// the Intel Xeon VM of BENCHMARKS.md (2026-12-03), kernels_microbench BM_MatMulShape 2048 x 2048
// F16, 4 tokens 0.914 -> 0.775 ms with 1 thread and 0.528 -> 0.416 ms with 2 (fastest of 4
// alternations; 2048 x 5632 and 6 tokens equal or faster). 16-register targets: 3, as before (4 x 3
// accumulators take 12 of the 16).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int64_t kMaxStreamTokens = 6;
#else
constexpr int64_t kMaxStreamTokens = 3;
#endif

// Calls f(std::integral_constant<size_t, T>) for T == n, 1 <= n <= kMaxStreamTokens.
template <size_t T = 1, class F>
HWY_INLINE void WithStreamTokens(int64_t n, const F& f) {
  if constexpr (T <= static_cast<size_t>(kMaxStreamTokens)) {
    if (n == static_cast<int64_t>(T)) return f(std::integral_constant<size_t, T>());
    WithStreamTokens<T + 1>(n, f);
  }
}

// Column blocks (WeightView::col_block) are taken one at a time, each over every row of the
// range, so that only a block's activations need to stay in L1 while the rows stream; each row
// tile's accumulators wait in a per-thread buffer between blocks (stored and loaded whole: the
// same multiply-adds in the same order as one pass over ggml rows, bit for bit).
template <class Tile, size_t T>
HWY_INLINE void DecodeStreams(const WeightView& w, const float* x, int64_t row_begin,
                              int64_t row_end, float* y) {
  constexpr size_t S = kDecodeStreams;
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const size_t cols = static_cast<size_t>(w.cols);
  float* xp = PackBuffer(PackedVectors(cols) * lanes * T);
  PackTokenTile(x, T, T, cols, xp);
  const int64_t n = row_end - row_begin;
  const int64_t per = (n + static_cast<int64_t>(S) - 1) / static_cast<int64_t>(S);
  const int64_t blocks = NumColumnBlocks(w);
  // saved: [row - row_begin][T][lanes], the accumulators of every row between blocks.
  float* saved =
      blocks > 1 ? ScratchBuffer<Scratch::kSaved>(static_cast<size_t>(n) * T * lanes) : nullptr;
  for (int64_t j = 0; j < blocks; ++j) {
    const ColumnBlockView b = ColumnBlockOf(w, j);
    const bool first = j == 0, last = j + 1 == blocks;
    for (int64_t k = 0; k < per; ++k) {
      int64_t index[S];
      size_t valid = 0;
      for (size_t s = 0; s < S; ++s) {
        const int64_t row = row_begin + static_cast<int64_t>(s) * per + k;
        if (row < row_end) index[valid++] = row;
      }
      for (size_t s = valid; s < S; ++s) index[s] = index[valid - 1];
      TileAcc<S, T> acc;
      ZeroTile<S, T>(acc);
      if (!first) {
        for (size_t s = 0; s < valid; ++s) {
          const float* src = saved + static_cast<size_t>(index[s] - row_begin) * T * lanes;
          for (size_t i = 0; i < T; ++i) acc[s][i] = hn::Load(df, src + i * lanes);
        }
      }
      Tile::template Block<S, T, Prefetch::kNone>(b, index, PrefetchSpan(), xp, acc);
      if (last) {
        float out[S][T];
        ReduceTile<S, T>(acc, out);
        for (size_t s = 0; s < valid; ++s) {
          for (size_t i = 0; i < T; ++i) y[static_cast<int64_t>(i) * w.rows + index[s]] = out[s][i];
        }
      } else {
        for (size_t s = 0; s < valid; ++s) {
          float* dst = saved + static_cast<size_t>(index[s] - row_begin) * T * lanes;
          for (size_t i = 0; i < T; ++i) hn::Store(acc[s][i], df, dst + i * lanes);
        }
      }
    }
  }
}

template <class Tile>
void MatMulLoop(const WeightView& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y) {
  // A decode step of a few tokens is bound by weight bandwidth (DecodeStreams). More tokens are
  // bound by arithmetic, where token tiles share each decoded weight vector. The tile shape never
  // changes a result's bits (see the top of this file).
  if (n_tokens <= kMaxStreamTokens) {
    return WithStreamTokens(n_tokens, [&](auto tokens) {
      DecodeStreams<Tile, decltype(tokens)::value>(w, x, row_begin, row_end, y);
    });
  }
  // Rows are taken a panel at a time and every token of a block passes over a panel before the
  // next one is read, so each weight byte comes from memory once per block whatever n_tokens is.
  const size_t cols = static_cast<size_t>(w.cols);
  const size_t fit = kPanelBytes / static_cast<size_t>(w.row_bytes);
  const int64_t panel = static_cast<int64_t>(std::max(kRowTile, fit - fit % kRowTile));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kBlockTokens) {
    const int64_t nt = std::min(kBlockTokens, n_tokens - t0);
    const TokenTilePlan plan = PlanTokenTiles(nt);
    const float* xp = PackBlock(x + t0 * w.cols, cols, plan, nt);
    float* yb = y + t0 * w.rows;
    for (int64_t p0 = row_begin; p0 < row_end; p0 += panel) {
      PanelPasses<Tile>(w, xp, plan, p0, std::min(row_end, p0 + panel), row_end, yb,
                        p0 == row_begin);
    }
  }
}

// A quantized matmul call with at least this many tokens goes through the token tiles where the
// target has them (KernelTable::quant_tile_rows): below it, decoding 8 rows for a few tokens
// costs more than the per-row kernels' reduction saves (measured in docs/notes/decode-matmul.md).
constexpr int64_t kQuantTileMinTokens = 6;

// The quantized dot products of this target (quant_dot.h): the x86 kernels where the target has
// AVX2 (the VNNI build under AVX3 when the CPU has VNNI), else the scalar reference. All of them
// give the reference's bits, so the choice only changes speed.
kernels_internal::X86QuantDots QuantDotForTarget() {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  static const kernels_internal::X86QuantDots x86 =
      kernels_internal::X86QuantDot(/*allow_vnni=*/HWY_TARGET <= HWY_AVX3);
  if (x86.tokens != nullptr) return x86;
#endif
  return {&kernels_ref::QuantDotTokens, &kernels_ref::QuantDotRange, nullptr};
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
      return kernels_internal::QuantMatMulRowsFromFloat(QuantDotForTarget().tokens,
                                                        QuantDotForTarget().range, w, x, n_tokens,
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
  for (size_t b = 0; b < n / B::kElements; ++b)
    B::Decode(src + b * B::kBytes, dst + b * B::kElements);
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
  table->matmul_stream_tokens = kMaxStreamTokens;
  table->dequantize_row = &DequantizeRowT;
  table->quant_dot = QuantDotForTarget().tokens;
  table->quant_dot_range = QuantDotForTarget().range;
  table->quant_tile_rows = QuantDotForTarget().tile;
  table->quant_tile_min_tokens = kQuantTileMinTokens;
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
