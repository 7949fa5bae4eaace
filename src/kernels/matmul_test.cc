// MatMul and DequantizeRow: every compiled target against the scalar reference (within
// kMatMulRelTolerance on random inputs, exactly on integer inputs whose sums are exact in float),
// batch invariance through the public API with 1 and 2 threads, and type / shape errors.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/kernel_ref.h"
#include "kernels/kernel_target.h"
#include "kernels/kernel_tolerance.h"
#include "kernels/kernels_test_util.h"

namespace kvengine {
namespace {

using kernels_test::ColsFor;
using kernels_test::kMatMulTypes;
using kernels_test::RandomFloats;
using kernels_test::RandomInts;
using kernels_test::RandomWeights;
using kernels_test::SameFloat;
using kernels_test::ScopedKernelTarget;
using kernels_test::TestWeights;

constexpr int64_t kRowCounts[] = {1, 5, 13};
constexpr int64_t kTokenCounts[] = {1, 3, 6, 9};

std::vector<float> RunRows(const KernelTable& k, const WeightView& w, const std::vector<float>& x,
                           int64_t n_tokens) {
  std::vector<float> y(static_cast<size_t>(n_tokens * w.rows), std::nanf(""));
  k.matmul_rows(w, x.data(), n_tokens, 0, w.rows, y.data());
  return y;
}

// sum_c |w[r][c] * x[t][c]| for every (t, r), in double, from the exactly decoded weights.
std::vector<double> AbsDotSums(const WeightView& w, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<double> sums(static_cast<size_t>(n_tokens * w.rows));
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    kernels_ref::DequantizeRow(w.type, w.data + r * w.row_bytes, w.cols, row.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      double s = 0.0;
      for (int64_t c = 0; c < w.cols; ++c) {
        s += std::fabs(static_cast<double>(row[c]) * x[t * w.cols + c]);
      }
      sums[t * w.rows + r] = s;
    }
  }
  return sums;
}

TEST(MatMulTest, EveryTargetMatchesReferenceWithinTolerance) {
  std::mt19937 rng(42);
  const KernelTable& ref = ReferenceKernelTable();
  for (GgmlType type : kMatMulTypes) {
    for (int64_t cols : ColsFor(type)) {
      for (int64_t rows : kRowCounts) {
        const int64_t n_tokens = kTokenCounts[(cols + rows) % 4];
        SCOPED_TRACE(testing::Message() << GgmlTypeName(type) << " " << rows << " x " << cols
                                        << " tokens=" << n_tokens);
        const TestWeights w = RandomWeights(rng, type, rows, cols);
        const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n_tokens * cols));
        const std::vector<float> want = RunRows(ref, w.view, x, n_tokens);
        const std::vector<double> abs_sums = AbsDotSums(w.view, x, n_tokens);
        for (const KernelTable& k : AvailableKernelTables()) {
          const std::vector<float> got = RunRows(k, w.view, x, n_tokens);
          for (size_t i = 0; i < got.size(); ++i) {
            const double tol = kMatMulRelTolerance * static_cast<double>(cols + 2) * abs_sums[i];
            ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want[i]), tol)
                << k.target_name << " output " << i << ": got " << got[i] << " want " << want[i];
          }
        }
      }
    }
  }
}

// Integer weights and activations small enough that every partial sum is an exact float: any
// summation order gives the exact result, so every target must equal the reference bit for bit.
// (Catches a skipped or doubled element that a tolerance could hide.)
TEST(MatMulTest, EveryTargetExactOnIntegerInputs) {
  std::mt19937 rng(7);
  const KernelTable& ref = ReferenceKernelTable();
  for (GgmlType type : kMatMulTypes) {
    for (int64_t cols : ColsFor(type)) {
      // |sum| <= cols * 8 * 128 < 2^24 for cols <= 4096 (integer weights stay within 128).
      const TestWeights w = RandomWeights(rng, type, 6, cols, /*integers=*/true);
      const int64_t n_tokens = 5;
      const std::vector<float> x = RandomInts(rng, static_cast<size_t>(n_tokens * cols), 8);
      const std::vector<float> want = RunRows(ref, w.view, x, n_tokens);
      for (const KernelTable& k : AvailableKernelTables()) {
        const std::vector<float> got = RunRows(k, w.view, x, n_tokens);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], want[i])
              << k.target_name << " " << GgmlTypeName(type) << " cols=" << cols << " output " << i;
        }
      }
    }
  }
}

TEST(MatMulTest, RowRangeWritesOnlyItsRows) {
  std::mt19937 rng(3);
  const TestWeights w = RandomWeights(rng, GgmlType::kF16, 11, 40);
  const std::vector<float> x = RandomFloats(rng, 3 * 40);
  for (const KernelTable& k : AvailableKernelTables()) {
    std::vector<float> y(3 * 11, -7.0f);
    k.matmul_rows(w.view, x.data(), 3, 2, 9, y.data());
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t r = 0; r < 11; ++r) {
        const bool inside = r >= 2 && r < 9;
        EXPECT_EQ(y[t * 11 + r] == -7.0f, !inside) << k.target_name << " t=" << t << " r=" << r;
      }
    }
  }
}

// Batch invariance through the public API on every target: a token's outputs are bit-identical
// whether it is computed alone or in a batch (of any size, in any position), with 1 to 3 threads
// (the rows are split in pieces claimed by whichever thread is free: a timing-dependent split).
TEST(MatMulTest, BatchInvariantOnEveryTarget) {
  std::mt19937 rng(11);
  ThreadPool one(1);
  ThreadPool two(2);
  ThreadPool three(3);  // More threads than cores: pieces go to whichever is scheduled.
  for (const std::string& target : AvailableKernelTargets()) {
    ScopedKernelTarget scoped(target);
    for (GgmlType type : kMatMulTypes) {
      // 37 rows: not a multiple of the row tile or of the per-thread unit. Nine shapes, each also
      // run with one token more: 3 and 5 tokens (the decode streams take up to 3, on AVX-512 up to
      // 6), 2, 9, 11 and 13 tokens over 117 columns for the float types (an odd number of whole
      // 16-lane vectors, then a partial one; on AVX-512 9 tokens take the token tiles of 6, 2 and
      // 1, 11 those of 6, 4 and 1, 13 two of 6 and one of 1), a small one (7 tokens, tails in every
      // tile), a wide one whose rows span several panels (4096 columns: 16 or 32 rows per 256 KiB
      // panel) and one of 400 tokens, more than one token block (192 on AVX-512, 64 elsewhere).
      const int64_t small = kernels_test::SmallCols(type);
      const int64_t odd_cols = kernels_test::BlockElements(type) == 1 ? 117 : small;
      for (const auto& [cols, n_tokens] :
           {std::pair<int64_t, int64_t>{small, 3}, std::pair<int64_t, int64_t>{odd_cols, 5},
            std::pair<int64_t, int64_t>{odd_cols, 2}, std::pair<int64_t, int64_t>{small, 7},
            std::pair<int64_t, int64_t>{odd_cols, 13}, std::pair<int64_t, int64_t>{odd_cols, 9},
            std::pair<int64_t, int64_t>{odd_cols, 11}, std::pair<int64_t, int64_t>{4096, 40},
            std::pair<int64_t, int64_t>{std::max<int64_t>(256, small), 400}}) {
        SCOPED_TRACE(testing::Message() << target << " " << GgmlTypeName(type) << " cols=" << cols
                                        << " tokens=" << n_tokens);
        const int64_t rows = 37;
        const TestWeights w = RandomWeights(rng, type, rows, cols);
        const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n_tokens * cols));
        // Each token alone, single-threaded.
        std::vector<float> single(static_cast<size_t>(n_tokens * rows));
        for (int64_t t = 0; t < n_tokens; ++t) {
          MatMul(w.view, x.data() + t * cols, 1, single.data() + t * rows, &one);
        }
        for (ThreadPool* pool : {&one, &two, &three, static_cast<ThreadPool*>(nullptr)}) {
          std::vector<float> batch(single.size());
          MatMul(w.view, x.data(), n_tokens, batch.data(), pool);
          for (size_t i = 0; i < batch.size(); ++i) {
            ASSERT_TRUE(SameFloat(batch[i], single[i]))
                << "output " << i << " batch " << batch[i] << " single " << single[i];
          }
        }
        // The same token in another batch (reversed order, with one new token in front).
        std::vector<float> other(static_cast<size_t>((n_tokens + 1) * cols));
        const std::vector<float> extra = RandomFloats(rng, static_cast<size_t>(cols));
        std::copy(extra.begin(), extra.end(), other.begin());
        for (int64_t t = 0; t < n_tokens; ++t) {
          std::copy(x.begin() + t * cols, x.begin() + (t + 1) * cols,
                    other.begin() + (n_tokens - t) * cols);
        }
        std::vector<float> y(static_cast<size_t>((n_tokens + 1) * rows));
        MatMul(w.view, other.data(), n_tokens + 1, y.data(), &two);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_TRUE(SameFloat(y[(n_tokens - t) * rows + r], single[t * rows + r]))
                << "token " << t << " row " << r;
          }
        }
      }
    }
  }
}

// Q/K/V-like heights (not multiples of the 16-row unit) in one call: the same bits as separate
// calls, for 1 and 5 tokens, with and without threads.
TEST(MatMulTest, MultiEqualsSeparateCalls) {
  std::mt19937 rng(23);
  ThreadPool two(2);
  const int64_t cols = 72;
  const int64_t heights[] = {40, 9, 9, 33};
  std::vector<TestWeights> ws;
  for (int64_t h : heights) ws.push_back(RandomWeights(rng, GgmlType::kF16, h, cols));
  for (int64_t n_tokens : {1, 5}) {
    const std::vector<float> x = RandomFloats(rng, static_cast<size_t>(n_tokens * cols));
    for (ThreadPool* pool : {&two, static_cast<ThreadPool*>(nullptr)}) {
      std::vector<std::vector<float>> separate, multi;
      std::vector<const WeightView*> views;
      std::vector<float*> outs;
      for (const TestWeights& w : ws) {
        separate.emplace_back(static_cast<size_t>(n_tokens * w.view.rows));
        multi.emplace_back(separate.back().size(), -1.0f);
        MatMul(w.view, x.data(), n_tokens, separate.back().data(), nullptr);
        views.push_back(&w.view);
      }
      for (std::vector<float>& m : multi) outs.push_back(m.data());
      MatMulMulti(views, x.data(), n_tokens, outs, pool);
      for (size_t i = 0; i < ws.size(); ++i) {
        for (size_t j = 0; j < multi[i].size(); ++j) {
          ASSERT_TRUE(SameFloat(multi[i][j], separate[i][j])) << "matrix " << i << " out " << j;
        }
      }
    }
  }
}

TEST(MatMulTest, ZeroTokensWritesNothing) {
  std::mt19937 rng(5);
  const TestWeights w = RandomWeights(rng, GgmlType::kF32, 4, 8);
  float y = 3.0f;
  MatMul(w.view, nullptr, 0, &y, nullptr);
  EXPECT_EQ(y, 3.0f);
}

TEST(DequantizeRowTest, EveryTargetBitIdenticalToReference) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> byte(0, 255);
  for (GgmlType type : kMatMulTypes) {
    for (int64_t n : ColsFor(type)) {
      const size_t bytes = static_cast<size_t>(*GgmlRowBytes(type, static_cast<uint64_t>(n)));
      std::vector<uint8_t> src(bytes);
      // Arbitrary bits for the float formats: NaNs, infinities and subnormals included.
      for (uint8_t& b : src) b = static_cast<uint8_t>(byte(rng));
      // Block scales and mins: finite f16 values of both signs, tiny and large.
      const std::vector<size_t> halves = BlockHalfFieldOffsets(type);
      const size_t block_bytes = GetGgmlTypeTraits(type).bytes_per_block;
      for (size_t off = 0; !halves.empty() && off < bytes; off += block_bytes) {
        for (size_t h : halves) {
          const uint16_t d = static_cast<uint16_t>(byte(rng) << 8 | byte(rng)) & 0xFBFF;
          std::memcpy(&src[off + h], &d, 2);
        }
      }
      std::vector<float> want(static_cast<size_t>(n));
      kernels_ref::DequantizeRow(type, src.data(), n, want.data());
      for (const std::string& target : AvailableKernelTargets()) {
        ScopedKernelTarget scoped(target);
        std::vector<float> got(static_cast<size_t>(n) + 1, -1.0f);
        DequantizeRow(type, src.data(), n, got.data());
        EXPECT_EQ(got[static_cast<size_t>(n)], -1.0f) << "wrote past the row";
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(SameFloat(got[i], want[i]))
              << target << " " << GgmlTypeName(type) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

TEST(MatMulTypeTest, SupportedTypesAndClearErrors) {
  for (GgmlType type : kMatMulTypes) EXPECT_TRUE(CheckMatMulType(type).ok()) << GgmlTypeName(type);
  for (GgmlType type : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kF64, GgmlType::kI8,
                        GgmlType::kIQ2_XXS, GgmlType::kMXFP4, GgmlType::kQ8_K}) {
    const Status s = CheckMatMulType(type);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(std::string("weight type ") + GgmlTypeName(type) + " "),
              std::string::npos)
        << s.message();
  }
}

TEST(MatMulTypeTest, CheckWeightViewRejectsBadShapes) {
  std::vector<uint8_t> bytes(1024);
  EXPECT_TRUE(CheckWeightView({GgmlType::kQ8_0, 2, 64, bytes.data(), 68}).ok());
  EXPECT_FALSE(CheckWeightView({GgmlType::kQ8_0, 2, 48, bytes.data(), 68}).ok());  // Part block.
  EXPECT_FALSE(CheckWeightView({GgmlType::kQ8_0, 2, 64, bytes.data(), 67}).ok());  // Short row.
  EXPECT_FALSE(CheckWeightView({GgmlType::kF16, 0, 64, bytes.data(), 128}).ok());
  EXPECT_FALSE(CheckWeightView({GgmlType::kF16, 2, 64, nullptr, 128}).ok());
  const Status s = CheckWeightView({GgmlType::kQ3_K, 2, 256, bytes.data(), 110});
  EXPECT_NE(s.message().find("q3_K"), std::string::npos) << s.message();
  // Every block format: whole blocks pass; a row of 896 (not a multiple of 256) is refused for
  // the K-quants with an error naming the shape and the type.
  for (GgmlType type : kMatMulTypes) {
    const int64_t block = kernels_test::BlockElements(type);
    const size_t row = static_cast<size_t>(*GgmlRowBytes(type, static_cast<uint64_t>(block)));
    EXPECT_TRUE(CheckWeightView({type, 2, block, bytes.data(), row}).ok()) << GgmlTypeName(type);
  }
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    std::vector<uint8_t> big(4096);
    const Status bad = CheckWeightView({type, 2, 896, big.data(), 2000});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("2 x 896"), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find(GgmlTypeName(type)), std::string::npos) << bad.message();
  }
  const Status odd = CheckWeightView({GgmlType::kQ4_0, 2, 48, bytes.data(), 100});
  EXPECT_NE(odd.message().find("q4_0"), std::string::npos) << odd.message();
}

TEST(MatMulTypeDeathTest, UnsupportedTypeIsACheckFailure) {
  std::vector<uint8_t> bytes(1024);
  std::vector<float> x(256);
  std::vector<float> y(2);
  const WeightView w{GgmlType::kQ3_K, 2, 256, bytes.data(), 110};
  EXPECT_DEATH(MatMul(w, x.data(), 1, y.data(), nullptr), "q3_K");
}

}  // namespace
}  // namespace kvengine
