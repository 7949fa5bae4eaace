// Column blocks (weight_view.h): a matrix stored in them gives bit for bit what its ggml rows give,
// on every compiled target, through every path of MatMul (the decode streams, which take the
// blocks one at a time with their accumulators saved between them, and the token tiles, which run
// the blocks in turn per tile) and through the scalar reference; DequantizeWeightRow gathers a
// row; the quantized types' dot products carry their accumulators across blocks to the same bits;
// CheckWeightView refuses blocks the kernels cannot read; PreferredColumnBlock's widths.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "gguf/gguf_layout.h"
#include "kernels/kernel_target.h"
#include "kernels/kernels_test_util.h"
#include "kernels/matmul.h"

namespace kvengine {
namespace {

using kernels_test::Blocked;
using kernels_test::BlockedWeights;
using kernels_test::RandomFloats;
using kernels_test::RandomWeights;
using kernels_test::SameFloat;
using kernels_test::ScopedKernelTarget;
using kernels_test::TestWeights;

constexpr GgmlType kBlockFloatTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16};
constexpr GgmlType kBlockQuantTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1,
                                         GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ4_K,
                                         GgmlType::kQ5_K, GgmlType::kQ6_K};

// Shapes: {rows, cols, block}. The last block narrower than a vector (200 = 3 x 64 + 8), wider
// with a partial vector (1030 = 2 x 512 + 6), PreferredColumnBlock's width for 4100 columns (1408:
// 3 blocks, the last 1284) and one block only over two (rows 5: fewer than the decode streams).
struct BlockShape {
  int64_t rows, cols, block;
};
constexpr BlockShape kBlockShapes[] = {
    {37, 200, 64}, {37, 1030, 512}, {21, 4100, 1408}, {5, 130, 64}};
// Decode streams (up to 3, on AVX-512 up to 6 tokens) and token tiles, a padded tail tile (7, 9,
// 13) and more than one token block (200 > 192).
constexpr int64_t kBlockTokenCounts[] = {1, 2, 3, 5, 6, 7, 9, 13, 40, 200};

// MatMul over `blocked` gives MatMul over `rows`' bits for n random tokens, with 2 threads and
// without a pool.
void ExpectSameBits(std::mt19937& rng, ThreadPool& two, const WeightView& rows,
                    const WeightView& blocked, int64_t n) {
  const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n * rows.cols));
  for (ThreadPool* pool : {&two, static_cast<ThreadPool*>(nullptr)}) {
    std::vector<float> want(static_cast<size_t>(n * rows.rows)), got(want.size(), -1.0f);
    MatMul(rows, x.data(), n, want.data(), pool);
    MatMul(blocked, x.data(), n, got.data(), pool);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(SameFloat(got[i], want[i]))
          << "output " << i << ": blocks " << got[i] << ", rows " << want[i];
    }
  }
}

TEST(MatMulColumnBlocksTest, SameBitsAsRowsOnEveryTargetAndPath) {
  std::mt19937 rng(5);
  ThreadPool two(2);
  for (const std::string& target : AvailableKernelTargets()) {
    ScopedKernelTarget scoped(target);
    for (GgmlType type : kBlockFloatTypes) {
      for (const BlockShape& s : kBlockShapes) {
        const TestWeights rows = RandomWeights(rng, type, s.rows, s.cols);
        const BlockedWeights blocked = Blocked(rows.view, s.block);
        ASSERT_TRUE(CheckWeightView(blocked.view).ok());
        for (int64_t n : kBlockTokenCounts) {
          SCOPED_TRACE(testing::Message()
                       << target << " " << GgmlTypeName(type) << " " << s.rows << " x " << s.cols
                       << " / " << s.block << ", " << n << " tokens");
          ExpectSameBits(rng, two, rows.view, blocked.view, n);
        }
      }
    }
  }
}

// The quantized types (their dot products carry each token's lane accumulators from block to
// block, quant_dot.h): blocks of 256 and 512 columns; a last block of 288 (9 blocks of 32: a
// partial group of 8, whose missing terms are +0) and of 32 (one block) for the 32-element
// formats, whole super-blocks for the K-quants; rows 5, fewer than a group of anything.
struct QuantBlockShape {
  int64_t rows, cols, block;
  bool k_quants;  // Also valid for Q4_K / Q5_K / Q6_K (cols a multiple of 256).
};
constexpr QuantBlockShape kQuantBlockShapes[] = {
    {37, 768, 256, true}, {21, 1280, 512, true}, {21, 1312, 512, false}, {5, 544, 256, false}};
// One token (the registers-only group path where a block is whole groups), 2, 3, 9 (more than
// the x86 kernels' chunk of 8 tokens) and 40.
constexpr int64_t kQuantBlockTokenCounts[] = {1, 2, 3, 9, 40};

TEST(MatMulColumnBlocksTest, QuantizedSameBitsAsRowsOnEveryTarget) {
  std::mt19937 rng(7);
  ThreadPool two(2);
  for (const std::string& target : AvailableKernelTargets()) {
    ScopedKernelTarget scoped(target);
    for (GgmlType type : kBlockQuantTypes) {
      const bool k_quant = GetGgmlTypeTraits(type).block_size == 256;
      for (const QuantBlockShape& s : kQuantBlockShapes) {
        if (k_quant && !s.k_quants) continue;
        const TestWeights rows = RandomWeights(rng, type, s.rows, s.cols);
        const BlockedWeights blocked = Blocked(rows.view, s.block);
        ASSERT_TRUE(CheckWeightView(blocked.view).ok()) << CheckWeightView(blocked.view).message();
        for (int64_t n : kQuantBlockTokenCounts) {
          SCOPED_TRACE(testing::Message()
                       << target << " " << GgmlTypeName(type) << " " << s.rows << " x " << s.cols
                       << " / " << s.block << ", " << n << " tokens");
          ExpectSameBits(rng, two, rows.view, blocked.view, n);
        }
      }
    }
  }
}

// The scalar reference's matmul and DequantizeWeightRow over a `type` matrix in blocks give what
// they give over its rows.
void ExpectReferenceAndLookupGather(std::mt19937& rng, GgmlType type, int64_t n_rows, int64_t cols,
                                    int64_t block) {
  SCOPED_TRACE(GgmlTypeName(type));
  const KernelTable& ref = ReferenceKernelTable();
  const TestWeights rows = RandomWeights(rng, type, n_rows, cols);
  const BlockedWeights blocked = Blocked(rows.view, block);
  const int64_t n = 3;
  const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n * cols));
  std::vector<float> want(static_cast<size_t>(n * n_rows)), got(want.size());
  ref.matmul_rows(rows.view, x.data(), n, 0, n_rows, want.data());
  ref.matmul_rows(blocked.view, x.data(), n, 0, n_rows, got.data());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(SameFloat(got[i], want[i])) << i;
  std::vector<float> row(static_cast<size_t>(cols)), gathered(row.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    DequantizeRow(type, rows.view.data + static_cast<size_t>(r) * rows.view.row_bytes, cols,
                  row.data());
    DequantizeWeightRow(blocked.view, r, gathered.data());
    ASSERT_EQ(std::memcmp(row.data(), gathered.data(), row.size() * sizeof(float)), 0)
        << "row " << r;
  }
}

TEST(MatMulColumnBlocksTest, ReferenceAndRowLookupGatherTheBlocks) {
  std::mt19937 rng(6);
  for (GgmlType type : kBlockFloatTypes) {
    const BlockShape s = kBlockShapes[1];
    ExpectReferenceAndLookupGather(rng, type, s.rows, s.cols, s.block);
  }
  for (GgmlType type : kBlockQuantTypes) {
    const QuantBlockShape s = kQuantBlockShapes[1];
    ExpectReferenceAndLookupGather(rng, type, s.rows, s.cols, s.block);
  }
}

TEST(MatMulColumnBlocksTest, CheckWeightViewRefusesBlocksTheKernelsCannotRead) {
  std::vector<uint8_t> bytes(8192);
  EXPECT_TRUE(CheckWeightView({GgmlType::kF16, 2, 200, bytes.data(), 400, 64}).ok());
  EXPECT_TRUE(CheckWeightView({GgmlType::kF32, 2, 200, bytes.data(), 800, 128}).ok());
  EXPECT_TRUE(CheckWeightView({GgmlType::kQ8_0, 2, 512, bytes.data(), 544, 256}).ok());
  const Status quantized = CheckWeightView({GgmlType::kQ8_0, 2, 512, bytes.data(), 544, 64});
  EXPECT_NE(quantized.message().find("multiple of 256"), std::string::npos) << quantized.message();
  const Status other = CheckWeightView({GgmlType::kQ2_K, 2, 512, bytes.data(), 168, 256});
  EXPECT_FALSE(other.ok());
  const Status odd = CheckWeightView({GgmlType::kF16, 2, 200, bytes.data(), 400, 48});
  EXPECT_NE(odd.message().find("multiple of 64"), std::string::npos) << odd.message();
  EXPECT_FALSE(CheckWeightView({GgmlType::kF16, 2, 200, bytes.data(), 400, -64}).ok());
  const Status padded = CheckWeightView({GgmlType::kF16, 2, 200, bytes.data(), 404, 64});
  EXPECT_NE(padded.message().find("exactly 400 bytes"), std::string::npos) << padded.message();
}

TEST(MatMulColumnBlocksTest, PreferredWidthsAreTheFewestEqualBlocksOfAtMost2048Or8192) {
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kF16, 2048), 0);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kF16, 2049), 1088);  // 2 blocks of 1025 -> 1088.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kF16, 4096), 2048);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kBF16, 5632), 1920);  // llama-1b's down projection.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kF32, 11008), 1856);  // Llama-2-7B's.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kF16, 4100), 1408);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ8_0, 5632), 0);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ4_K, 11008), 5632);  // Llama-2-7B: 2 x 5504 -> 5632.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ8_0, 8192), 0);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ8_0, 14336), 7168);  // Llama-3-8B's down projection.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ6_K, 14336), 7168);
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ4_0, 8448), 4352);  // 2 blocks of 4224 -> 4352.
  EXPECT_EQ(PreferredColumnBlock(GgmlType::kQ2_K, 14336), 0);    // No kernel reads it in blocks.
  for (int64_t cols : {8448, 11264, 14336, 28672}) {
    const int64_t b = PreferredColumnBlock(GgmlType::kQ4_K, cols);
    EXPECT_EQ(b % 256, 0) << cols;
    EXPECT_LE(b, kMaxQuantColumnBlock) << cols;
    EXPECT_EQ(ColumnBlocks(cols, b), (cols + kMaxQuantColumnBlock - 1) / kMaxQuantColumnBlock)
        << cols;
  }
  for (int64_t cols : {2049, 3000, 4096, 5632, 11008, 14336, 28672}) {
    const int64_t b = PreferredColumnBlock(GgmlType::kF16, cols);
    EXPECT_EQ(b % kColumnBlockAlign, 0) << cols;
    EXPECT_LE(b, kMaxColumnBlock) << cols;
    EXPECT_EQ(ColumnBlocks(cols, b), (cols + kMaxColumnBlock - 1) / kMaxColumnBlock) << cols;
  }
}

}  // namespace
}  // namespace kvengine
