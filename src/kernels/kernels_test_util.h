// Helpers shared by the kernel tests: random inputs (never all zeros), random weight matrices in
// every supported format, and a scoped kernel-target override.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_layout.h"
#include "kernels/kernel_target.h"
#include "quant/weight_blocks.h"
#include "quant/weight_view.h"
#include "quant/half.h"

namespace kvengine::kernels_test {

inline constexpr GgmlType kMatMulTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ4_K, GgmlType::kQ5_K,
    GgmlType::kQ6_K};

// Elements per block of `type` (1 for the float formats).
inline int64_t BlockElements(GgmlType type) { return GetGgmlTypeTraits(type).block_size; }

// Normal(0, stddev) floats.
inline std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float stddev = 1.0f) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Integers in [-limit, limit], never all zero, as floats.
inline std::vector<float> RandomInts(std::mt19937& rng, size_t n, int limit) {
  std::uniform_int_distribution<int> dist(-limit, limit);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(rng));
  v[0] = 1.0f;
  return v;
}

// A weight matrix that owns its bytes (ggml layout, weight_view.h); `view` points into `bytes`.
struct TestWeights {
  std::vector<uint8_t> bytes;
  WeightView view;
};

// Random weights of `type`: float formats hold normal(0, 1) values rounded to the format (or
// integers in [-8, 8] when `integers`); Q8_0 blocks hold a random f16 scale in [2^-8, 2^-4]
// (1.0 when `integers`) and random codes in [-127, 127]. The other block formats hold random
// bytes with every f16 field (scale, min) set to +-[2^-8, 2^-4]; when `integers`, d = 1, mins are
// integers in [-8, 8] and the K-quants' sub-block scales are at most 3 (Q6_K: in [-4, 4]), so
// every element is an integer of magnitude <= 128. Rows are padded by `row_padding` bytes
// (filled with 0xFF, which no kernel may read).
inline TestWeights RandomWeights(std::mt19937& rng, GgmlType type, int64_t rows, int64_t cols,
                                 bool integers = false, size_t row_padding = 3) {
  const size_t row_bytes = static_cast<size_t>(*GgmlRowBytes(type, static_cast<uint64_t>(cols)));
  TestWeights w;
  w.bytes.assign(static_cast<size_t>(rows) * (row_bytes + row_padding), 0xFF);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small_int(-8, 8);
  std::uniform_int_distribution<int> code(-127, 127);
  std::uniform_real_distribution<float> log_scale(-8.0f, -4.0f);
  const auto value = [&] { return integers ? static_cast<float>(small_int(rng)) : normal(rng); };
  const std::optional<WeightFormat> format = WeightFormatOf(type);
  if (!format.has_value()) {
    ADD_FAILURE() << "no test weights for " << GgmlTypeName(type);
    return w;
  }
  const int64_t block_elements = BlockElements(type);
  const size_t block_bytes = GetGgmlTypeTraits(type).bytes_per_block;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.bytes.data() + static_cast<size_t>(r) * (row_bytes + row_padding);
    for (int64_t c = 0; c < cols; ++c) {
      switch (*format) {
        case WeightFormat::kQ4_0:
        case WeightFormat::kQ4_1:
        case WeightFormat::kQ5_0:
        case WeightFormat::kQ5_1:
        case WeightFormat::kQ4_K:
        case WeightFormat::kQ5_K:
        case WeightFormat::kQ6_K: {
          if (c % block_elements != 0) break;  // Whole blocks at a time.
          uint8_t* p = row + static_cast<size_t>(c / block_elements) * block_bytes;
          for (size_t i = 0; i < block_bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
          const std::vector<size_t> halves = BlockHalfFieldOffsets(type);
          for (size_t k = 0; k < halves.size(); ++k) {
            float v = std::exp2(log_scale(rng)) * (sign(rng) ? -1.0f : 1.0f);
            if (integers) v = k == 0 ? 1.0f : static_cast<float>(small_int(rng));
            const uint16_t h = F32ToF16(v);
            std::memcpy(p + halves[k], &h, 2);
          }
          if (integers && (type == GgmlType::kQ4_K || type == GgmlType::kQ5_K)) {
            for (size_t i = 4; i < 16; ++i) p[i] &= 0x03;  // Scales and mins <= 3.
          }
          if (integers && type == GgmlType::kQ6_K) {
            std::uniform_int_distribution<int> scale(-4, 4);
            for (size_t i = 192; i < 208; ++i) {
              p[i] = static_cast<uint8_t>(static_cast<int8_t>(scale(rng)));
            }
          }
          break;
        }
        case WeightFormat::kF32: {
          const float v = value();
          std::memcpy(row + 4 * c, &v, 4);
          break;
        }
        case WeightFormat::kF16: {
          const uint16_t h = F32ToF16(value());
          std::memcpy(row + 2 * c, &h, 2);
          break;
        }
        case WeightFormat::kBF16: {
          const uint16_t b = F32ToBf16(value());
          std::memcpy(row + 2 * c, &b, 2);
          break;
        }
        case WeightFormat::kQ8_0: {
          uint8_t* block = row + static_cast<size_t>(c / 32) * kQ8_0BlockBytes;
          if (c % 32 == 0) {
            const uint16_t d = F32ToF16(integers ? 1.0f : std::exp2(log_scale(rng)));
            std::memcpy(block, &d, 2);
          }
          block[2 + c % 32] = static_cast<uint8_t>(static_cast<int8_t>(code(rng)));
          break;
        }
      }
    }
  }
  w.view = {type, rows, cols, w.bytes.data(), row_bytes + row_padding};
  return w;
}

// Column sizes to test: odd sizes around the vector widths, and a large one. Block formats need
// whole blocks (32, or 256 for the K-quants).
inline std::vector<int64_t> ColsFor(GgmlType type) {
  const int64_t block = BlockElements(type);
  if (block == 32) return {32, 64, 96, 4096};
  if (block == 256) return {256, 512, 768, 4096};
  return {1, 3, 31, 33, 64, 4096};
}

// A small row length (about 100 columns) of whole blocks of `type`.
inline int64_t SmallCols(GgmlType type) {
  const int64_t block = BlockElements(type);
  return block == 1 ? 100 : (100 + block - 1) / block * block;
}

// Bit-identical floats (NaN matches any NaN).
inline bool SameFloat(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

// w's rows (ggml layout, padded rows allowed) in column blocks of `block` columns (packed in units
// of the type's blocks, as the loader packs them).
struct BlockedWeights {
  std::vector<uint8_t> bytes;
  WeightView view;
};
inline BlockedWeights Blocked(const WeightView& rows, int64_t block) {
  const GgmlTypeTraits traits = GetGgmlTypeTraits(rows.type);
  const size_t elem = traits.bytes_per_block;
  const size_t row_bytes = static_cast<size_t>(rows.cols / traits.block_size) * elem;
  std::vector<uint8_t> dense(static_cast<size_t>(rows.rows) * row_bytes);
  for (int64_t r = 0; r < rows.rows; ++r) {
    std::memcpy(dense.data() + static_cast<size_t>(r) * row_bytes,
                rows.data + static_cast<size_t>(r) * rows.row_bytes, row_bytes);
  }
  BlockedWeights b;
  b.bytes.resize(dense.size());
  PackColumnBlocks(dense.data(), rows.rows, rows.cols / traits.block_size, elem,
                   block / traits.block_size, b.bytes.data());
  b.view = {rows.type, rows.rows, rows.cols, b.bytes.data(), row_bytes, block};
  return b;
}

// Forces a kernel target for one scope, then restores the previous one.
class ScopedKernelTarget {
 public:
  explicit ScopedKernelTarget(const std::string& name) : previous_(ActiveKernelTarget()) {
    const Status status = ForceKernelTarget(name);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  ~ScopedKernelTarget() { EXPECT_TRUE(ForceKernelTarget(previous_).ok()); }
  ScopedKernelTarget(const ScopedKernelTarget&) = delete;
  ScopedKernelTarget& operator=(const ScopedKernelTarget&) = delete;

 private:
  std::string previous_;
};

}  // namespace kvengine::kernels_test
