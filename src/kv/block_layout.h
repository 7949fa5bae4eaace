// BlockLayout: where each byte of one KV block lives.
//
// A block holds `block_size` consecutive token positions of one sequence for every layer of its
// group, contiguous, so one block is one copy to move between tiers. Within a block, for each
// layer i of the group in order, four sections, each starting on a kSectionAlign boundary:
//
//   K data   [num_kv_heads][block_size][k_row.data_bytes]
//   K scales [num_kv_heads][block_size][k_row.scale_bytes]   (absent when scale_bytes == 0)
//   V data   [num_kv_heads][block_size][v_row.data_bytes]    (absent for MLA)
//   V scales [num_kv_heads][block_size][v_row.scale_bytes]   (absent for MLA or no scales)
//
// Head-major, token-minor: a decode step for one head streams that head's rows of the block in
// order. bytes_per_block is exactly what the pool allocates per block; the planner uses it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/group_spec.h"
#include "quant/kv_dtype.h"

namespace kvengine {

inline constexpr size_t kSectionAlign = 64;  // One cache line; SIMD loads never straddle sections.
inline constexpr size_t kNumKvDtypes = std::size(kAllKvDtypes);

// Byte offsets of one layer's sections inside a block.
struct LayerSections {
  LayerKvDtypes dtypes;
  RowFormat k_row;
  RowFormat v_row;    // All zero for MLA.
  size_t k_data = 0;  // Offsets from the block's first byte.
  size_t k_scale = 0;
  size_t v_data = 0;
  size_t v_scale = 0;
};

class BlockLayout {
 public:
  BlockLayout(const KvGroupSpec& spec, int block_size);

  int block_size() const { return block_size_; }
  int num_kv_heads() const { return num_kv_heads_; }
  size_t bytes_per_block() const { return bytes_per_block_; }
  // Bytes of encoded K/V and scales per block by dtype (padding excluded).
  const std::array<uint64_t, kNumKvDtypes>& bytes_by_dtype() const { return bytes_by_dtype_; }
  // Alignment padding per block: bytes_per_block minus everything in bytes_by_dtype.
  uint64_t padding_bytes() const { return padding_bytes_; }
  const LayerSections& layer(int i) const { return layers_[static_cast<size_t>(i)]; }
  int num_layers() const { return static_cast<int>(layers_.size()); }

  // Row addresses for layer i (index within the group), head h, slot s (0 <= s < block_size).
  size_t KDataOffset(int i, int h, int s) const {
    const LayerSections& l = layers_[static_cast<size_t>(i)];
    return l.k_data + RowIndex(h, s) * l.k_row.data_bytes;
  }
  size_t KScaleOffset(int i, int h, int s) const {
    const LayerSections& l = layers_[static_cast<size_t>(i)];
    return l.k_scale + RowIndex(h, s) * l.k_row.scale_bytes;
  }
  size_t VDataOffset(int i, int h, int s) const {
    const LayerSections& l = layers_[static_cast<size_t>(i)];
    return l.v_data + RowIndex(h, s) * l.v_row.data_bytes;
  }
  size_t VScaleOffset(int i, int h, int s) const {
    const LayerSections& l = layers_[static_cast<size_t>(i)];
    return l.v_scale + RowIndex(h, s) * l.v_row.scale_bytes;
  }

 private:
  size_t RowIndex(int h, int s) const {
    return static_cast<size_t>(h) * static_cast<size_t>(block_size_) + static_cast<size_t>(s);
  }

  int block_size_;
  int num_kv_heads_;
  size_t bytes_per_block_ = 0;
  uint64_t padding_bytes_ = 0;
  std::array<uint64_t, kNumKvDtypes> bytes_by_dtype_{};
  std::vector<LayerSections> layers_;
};

}  // namespace kvengine
