// Token tiles of the quantized matmul (quant_tile.h): the tiled order is a permutation, the tiled
// activations hold each code, scale and sum where the layout says, and every table's
// quant_tile_rows equals the reference QuantDot bit for bit (every format, partial groups and
// tiles, row ranges, token chunks, column blocks), and MatMul through the tiles equals MatMul a
// token at a time.
#include "kernels/quant_tile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernel_ref.h"
#include "kernels/kernel_target.h"
#include "kernels/kernels_test_util.h"
#include "kernels/matmul.h"

namespace kvengine {
namespace {

using kernels_test::Blocked;
using kernels_test::BlockedWeights;
using kernels_test::ColsFor;
using kernels_test::kMatMulTypes;
using kernels_test::RandomFloats;
using kernels_test::RandomWeights;
using kernels_test::SameFloat;
using kernels_test::TestWeights;

TEST(TiledOffsetTest, IsAPermutationKeepingFourByteGroups) {
  std::vector<bool> seen(256, false);
  for (int64_t e = 0; e < 256; ++e) {
    const int64_t o = TiledOffset(e);
    ASSERT_GE(o, 0);
    ASSERT_LT(o, 256);
    EXPECT_FALSE(seen[static_cast<size_t>(o)]) << e;
    seen[static_cast<size_t>(o)] = true;
    EXPECT_EQ(o % 4, e % 4);
    // Lanes k and k + 8 of the four 64-byte vectors hold block k = e / 32.
    EXPECT_EQ((o % 64) / 4 % 8, e / 32) << e;
  }
}

// Bytes of `src` at `offset` as a T.
template <class T>
T At(const std::vector<uint8_t>& src, size_t offset) {
  T v;
  std::memcpy(&v, src.data() + offset, sizeof(T));
  return v;
}

TEST(TileActivationsTest, ThirtyTwoElementFormatsShiftCodesAndPadGroups) {
  std::mt19937 rng(5);
  constexpr int64_t kCols = 320;  // 10 blocks: a second, partial group of 2 blocks.
  const std::vector<float> x = RandomFloats(rng, kCols);
  for (ActivationFormat af : {ActivationFormat::kQ8_0, ActivationFormat::kQ8_1}) {
    std::vector<uint8_t> xq(ActivationRowBytes(af, kCols));
    QuantizeActivations(af, x.data(), kCols, xq.data());
    const size_t bytes = TiledActivationRowBytes(af, kCols);
    EXPECT_EQ(bytes % 64, 0u);
    std::vector<uint8_t> tiled(bytes, 0xAB);
    TileActivations(af, xq.data(), kCols, tiled.data());
    for (int64_t c = 0; c < 512; ++c) {
      const uint8_t want =
          c < kCols ? static_cast<uint8_t>(xq[static_cast<size_t>(c)] ^ 0x80) : 0x80;
      ASSERT_EQ(tiled[static_cast<size_t>(256 * (c / 256) + TiledOffset(c % 256))], want) << c;
    }
    for (int64_t b = 0; b < 16; ++b) {
      const float d = b < 10 ? At<float>(xq, kCols + 4 * b) : 0.0f;
      const float s = b < 10 ? At<float>(xq, kCols + 40 + 4 * b) : 0.0f;
      EXPECT_EQ(At<float>(tiled, 512 + 4 * b), d) << b;
      EXPECT_EQ(At<float>(tiled, 512 + 64 + 4 * b), s) << b;
    }
  }
}

TEST(TileActivationsTest, Q8KKeepsCodesScalesAndSums) {
  std::mt19937 rng(6);
  constexpr int64_t kCols = 512;
  const std::vector<float> x = RandomFloats(rng, kCols);
  std::vector<uint8_t> xq(ActivationRowBytes(ActivationFormat::kQ8_K, kCols));
  QuantizeActivations(ActivationFormat::kQ8_K, x.data(), kCols, xq.data());
  std::vector<uint8_t> tiled(TiledActivationRowBytes(ActivationFormat::kQ8_K, kCols));
  TileActivations(ActivationFormat::kQ8_K, xq.data(), kCols, tiled.data());
  const auto* blocks = reinterpret_cast<const Q8KBlock*>(xq.data());
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t e = 0; e < 256; ++e) {
      ASSERT_EQ(static_cast<int8_t>(tiled[static_cast<size_t>(256 * b + TiledOffset(e))]),
                blocks[b].qs[e]);
    }
    EXPECT_EQ(At<float>(tiled, 512 + 4 * b), blocks[b].d);
    for (int k = 0; k < 16; ++k) {
      EXPECT_EQ(At<int16_t>(tiled, 512 + 8 + 32 * b + 2 * k), blocks[b].bsums[k]);
    }
  }
}

// The tables that have token tiles (the x86 builds: AVX2, and AVX-512 VNNI on a CPU with it).
std::vector<const KernelTable*> TileTables() {
  std::vector<const KernelTable*> out;
  for (const KernelTable& k : AvailableKernelTables()) {
    if (k.quant_tile_rows != nullptr) out.push_back(&k);
  }
  return out;
}

// Tokens' tiled activation rows for w's format, and their plain quantized rows.
struct TokenRows {
  std::vector<uint8_t> quantized, tiled;
  size_t quantized_stride = 0, tiled_stride = 0;
};
TokenRows QuantizeTokens(ActivationFormat af, int64_t cols,
                         const std::vector<std::vector<float>>& xs) {
  TokenRows t;
  const size_t n = xs.size();
  t.quantized_stride = ActivationRowBytes(af, cols);
  t.tiled_stride = TiledActivationRowBytes(af, cols);
  t.quantized.resize(t.quantized_stride * n);
  t.tiled.resize(t.tiled_stride * n);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* q = t.quantized.data() + i * t.quantized_stride;
    QuantizeActivations(af, xs[i].data(), cols, q);
    TileActivations(af, q, cols, t.tiled.data() + i * t.tiled_stride);
  }
  return t;
}
TokenRows MakeTokens(std::mt19937& rng, ActivationFormat af, int64_t cols, int64_t n) {
  std::vector<std::vector<float>> xs;
  for (int64_t i = 0; i < n; ++i) {
    // The last token at a small scale; one token's first block all zero (d = 0).
    xs.push_back(RandomFloats(rng, static_cast<size_t>(cols), i == n - 1 ? 1e-3f : 1.0f));
    if (i == 1) std::fill(xs.back().begin(), xs.back().begin() + 32, 0.0f);
  }
  return QuantizeTokens(af, cols, xs);
}

// quant_tile_rows of `k` on w's rows [r0, r1) equals QuantDot of each row of `rows` (the same
// matrix in ggml rows) and leaves every other output alone.
void ExpectTileMatchesReference(const KernelTable& k, const WeightView& w, const WeightView& rows,
                                const TokenRows& t, int64_t n, int64_t r0, int64_t r1) {
  const WeightFormat format = *WeightFormatOf(w.type);
  std::vector<float> y(static_cast<size_t>(n * w.rows), -1.0f);
  k.quant_tile_rows(w, t.tiled.data(), t.tiled_stride, n, r0, r1, y.data());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < w.rows; ++r) {
      const float got = y[static_cast<size_t>(i * w.rows + r)];
      if (r < r0 || r >= r1) {
        ASSERT_EQ(got, -1.0f) << "row " << r << " outside [" << r0 << ", " << r1 << ")";
        continue;
      }
      const float want = kernels_ref::QuantDot(
          format, rows.data + static_cast<size_t>(r) * rows.row_bytes,
          t.quantized.data() + static_cast<size_t>(i) * t.quantized_stride, w.cols);
      ASSERT_TRUE(SameFloat(got, want))
          << k.target_name << " " << GgmlTypeName(w.type) << " cols=" << w.cols
          << (w.col_block > 0 ? " in column blocks" : "") << " row " << r << " token " << i
          << " of " << n << ": " << got << " vs " << want;
    }
  }
}

TEST(QuantTileRowsTest, EveryTableBitIdenticalToReference) {
  const std::vector<const KernelTable*> tables = TileTables();
  if (tables.empty()) GTEST_SKIP() << "no kernel target with token tiles on this CPU";
  std::mt19937 rng(23);
  for (GgmlType type : kMatMulTypes) {
    const std::optional<ActivationFormat> af = ActivationFormatOf(*WeightFormatOf(type));
    if (!af.has_value()) continue;
    std::vector<int64_t> cols_list = ColsFor(type);
    cols_list.push_back(kernels_test::BlockElements(type) * 9);  // A partial group of 8 blocks.
    for (int64_t cols : cols_list) {
      // 19 rows: two tiles of 8 and a partial one; rows padded (0xFF bytes no kernel may read).
      const TestWeights w = RandomWeights(rng, type, 19, cols);
      std::vector<BlockedWeights> views;
      if (cols >= 512 && cols % 256 == 0) views.push_back(Blocked(w.view, 256));
      // 70 tokens: more than one chunk of 64.
      for (int64_t n : {int64_t{1}, int64_t{9}, int64_t{70}}) {
        const TokenRows t = MakeTokens(rng, *af, cols, n);
        for (const KernelTable* k : tables) {
          ExpectTileMatchesReference(*k, w.view, w.view, t, n, 0, 19);
          ExpectTileMatchesReference(*k, w.view, w.view, t, n, 3, 14);
          for (const BlockedWeights& b : views) {
            ExpectTileMatchesReference(*k, b.view, w.view, t, n, 0, 19);
          }
        }
      }
    }
  }
}

// The codes at the ends of their ranges, where the AVX2 build's int16 pair sums come closest to
// saturating: Q8_0 weights of -128, -127 and 127, the 4-6 bit formats' random bytes (every code
// up to 15, 31 or 63), against activations of +-1 (codes +-127) with signs at random, all -1
// and all +1.
TEST(QuantTileRowsTest, CodesAtTheEndsOfTheirRanges) {
  const std::vector<const KernelTable*> tables = TileTables();
  if (tables.empty()) GTEST_SKIP() << "no kernel target with token tiles on this CPU";
  std::mt19937 rng(41);
  for (GgmlType type : kMatMulTypes) {
    const std::optional<ActivationFormat> af = ActivationFormatOf(*WeightFormatOf(type));
    if (!af.has_value()) continue;
    constexpr int64_t kCols = 512;
    TestWeights w = RandomWeights(rng, type, 11, kCols);
    if (type == GgmlType::kQ8_0) {
      const int8_t ends[] = {-128, -127, 127};
      std::uniform_int_distribution<int> pick(0, 2);
      for (int64_t r = 0; r < w.view.rows; ++r) {
        for (int64_t c = 0; c < kCols; ++c) {
          uint8_t* block = w.bytes.data() + static_cast<size_t>(r) * w.view.row_bytes +
                           static_cast<size_t>(c / 32) * kQ8_0BlockBytes;
          block[2 + c % 32] = static_cast<uint8_t>(ends[pick(rng)]);
        }
      }
    }
    std::bernoulli_distribution coin(0.5);
    std::vector<std::vector<float>> xs;
    for (int i = 0; i < 9; ++i) {
      std::vector<float> x(kCols, i == 1 ? -1.0f : 1.0f);
      if (i >= 2) {
        for (float& v : x) v = coin(rng) ? 1.0f : -1.0f;
      }
      xs.push_back(x);
    }
    const TokenRows t = QuantizeTokens(*af, kCols, xs);
    for (const KernelTable* k : tables) {
      ExpectTileMatchesReference(*k, w.view, w.view, t, static_cast<int64_t>(xs.size()), 0,
                                 w.view.rows);
    }
  }
}

// MatMul with enough tokens for the tiles gives each token what MatMul of that token alone gives
// (the per-row kernels), with and without threads.
TEST(QuantTileRowsTest, MatMulThroughTilesEqualsOneTokenAtATime) {
  std::mt19937 rng(31);
  ThreadPool pool(3);
  for (GgmlType type : kMatMulTypes) {
    if (!ActivationFormatOf(*WeightFormatOf(type)).has_value()) continue;
    const int64_t cols = 512;
    const TestWeights w = RandomWeights(rng, type, 45, cols);
    constexpr int64_t kTokens = 21;
    const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(kTokens * cols));
    std::vector<float> one(static_cast<size_t>(kTokens * w.view.rows));
    for (int64_t i = 0; i < kTokens; ++i) {
      MatMul(w.view, x.data() + i * cols, 1, one.data() + i * w.view.rows, nullptr);
    }
    for (ThreadPool* p : {&pool, static_cast<ThreadPool*>(nullptr)}) {
      std::vector<float> all(one.size(), -1.0f);
      MatMul(w.view, x.data(), kTokens, all.data(), p);
      for (size_t i = 0; i < one.size(); ++i) {
        ASSERT_TRUE(SameFloat(all[i], one[i])) << GgmlTypeName(type) << " output " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kvengine
