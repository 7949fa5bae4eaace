#include "kv/block_layout.h"

#include <gtest/gtest.h>

#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

using testing::FullGroup;

TEST(BlockLayoutTest, Llama2F16IsHalfAMebibytePerToken) {
  const BlockLayout l(FullGroup(32, 32, 128, KvDtype::kF16), 16);
  EXPECT_EQ(l.bytes_per_block(), 16u * 524288u);
  EXPECT_EQ(l.padding_bytes(), 0u);
  EXPECT_EQ(l.bytes_by_dtype()[size_t(KvDtype::kF16)], 16u * 524288u);
}

TEST(BlockLayoutTest, Int8AddsOneF16ScalePerRow) {
  const BlockLayout l(FullGroup(32, 8, 128, KvDtype::kInt8), 16);
  // Per layer: K and V each 8 heads x 16 tokens x (128 data + 2 scale bytes).
  EXPECT_EQ(l.bytes_per_block(), 32u * 2u * 8u * 16u * 130u);
}

TEST(BlockLayoutTest, SectionsAreAlignedAndDisjoint) {
  KvGroupSpec s = FullGroup(3, 3, 8, KvDtype::kInt4);
  s.dtypes[1] = {KvDtype::kF16, KvDtype::kInt8};  // K and V may differ per layer.
  for (int block : {1, 3, 16, 256}) {
    const BlockLayout l(s, block);
    size_t end = 0;
    for (int i = 0; i < l.num_layers(); ++i) {
      const LayerSections& sec = l.layer(i);
      for (size_t off : {sec.k_data, sec.k_scale, sec.v_data, sec.v_scale}) {
        EXPECT_EQ(off % kSectionAlign, 0u);
        EXPECT_GE(off, end);
        end = off;
      }
      // Last row of the last section ends inside the block.
      EXPECT_LE(l.VScaleOffset(i, 2, block - 1) + sec.v_row.scale_bytes, l.bytes_per_block());
      EXPECT_LE(l.KDataOffset(i, 2, block - 1) + sec.k_row.data_bytes, sec.k_scale);
    }
    uint64_t sum = l.padding_bytes();
    for (uint64_t d : l.bytes_by_dtype()) sum += d;
    EXPECT_EQ(sum, l.bytes_per_block());
  }
}

TEST(BlockLayoutTest, MlaStoresOneLatentRow) {
  KvGroupSpec s = FullGroup(61, 1, 576, KvDtype::kF16);
  s.kind = KvGroupKind::kMla;
  s.head_dim_v = 0;
  const BlockLayout l(s, 16);
  EXPECT_EQ(l.bytes_per_block(), 61u * 16u * 576u * 2u);
}

}  // namespace
}  // namespace kvengine
