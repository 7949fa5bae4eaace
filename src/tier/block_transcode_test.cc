// BlockTranscoder: a block re-encoded for a cold tier and back equals what quantizing each row
// once gives; the same dtype round-trips bit for bit; the cold block is smaller.
#include "tier/block_transcode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/codec.h"
#include "quant/half.h"

namespace kvengine {
namespace {

KvGroupSpec Spec(KvDtype dtype, int layers = 2, int heads = 3, int dim = 64) {
  KvGroupSpec s;
  s.kind = KvGroupKind::kFull;
  for (int l = 0; l < layers; ++l) s.layers.push_back(l);
  s.num_kv_heads = heads;
  s.head_dim_k = s.head_dim_v = dim;
  s.dtypes.assign(size_t(layers), LayerKvDtypes{dtype, dtype});
  return s;
}

// A pool block whose every row holds random values encoded in the pool dtype.
std::vector<uint8_t> RandomBlock(const KvGroupSpec& spec, int block_size, uint32_t seed) {
  const BlockLayout layout(spec, block_size);
  std::vector<uint8_t> block(layout.bytes_per_block(), 0);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> row(size_t(spec.head_dim_k));
  for (int i = 0; i < layout.num_layers(); ++i) {
    const LayerSections& l = layout.layer(i);
    for (int h = 0; h < spec.num_kv_heads; ++h) {
      for (int s = 0; s < block_size; ++s) {
        for (float& x : row) x = dist(rng);
        EncodeRow(l.dtypes.k, row.data(), spec.head_dim_k, &block[layout.KDataOffset(i, h, s)],
                  &block[layout.KScaleOffset(i, h, s)]);
        for (float& x : row) x = dist(rng);
        EncodeRow(l.dtypes.v, row.data(), spec.head_dim_v, &block[layout.VDataOffset(i, h, s)],
                  &block[layout.VScaleOffset(i, h, s)]);
      }
    }
  }
  return block;
}

TEST(BlockTranscodeTest, Int8ColdTierEqualsQuantizingEachRowOnce) {
  const KvGroupSpec spec = Spec(KvDtype::kF16);
  const int bs = 16;
  const BlockTranscoder t(spec, bs, KvDtype::kInt8);
  EXPECT_LT(t.cold_bytes(), t.pool_bytes() * 6 / 10);  // int8 + scales vs f16.
  const std::vector<uint8_t> pool = RandomBlock(spec, bs, 1);
  std::vector<uint8_t> cold(t.cold_bytes()), back(t.pool_bytes());
  t.Encode(pool, cold);
  t.Decode(cold, back);
  const BlockLayout layout(spec, bs);
  std::vector<float> orig(64), want(64), got(64);
  std::vector<uint8_t> q(RowFormatOf(KvDtype::kInt8, 64).data_bytes),
      qs(RowFormatOf(KvDtype::kInt8, 64).scale_bytes);
  for (int i = 0; i < 2; ++i) {
    for (int h = 0; h < 3; ++h) {
      for (int s = 0; s < bs; ++s) {
        DecodeRow(KvDtype::kF16, &pool[layout.KDataOffset(i, h, s)], nullptr, 64, orig.data());
        EncodeRow(KvDtype::kInt8, orig.data(), 64, q.data(), qs.data());
        DecodeRow(KvDtype::kInt8, q.data(), qs.data(), 64, want.data());
        for (float& x : want) x = F16ToF32(F32ToF16(x));  // Back in the f16 pool.
        DecodeRow(KvDtype::kF16, &back[layout.KDataOffset(i, h, s)], nullptr, 64, got.data());
        ASSERT_EQ(got, want) << "layer " << i << " head " << h << " slot " << s;
      }
    }
  }
}

TEST(BlockTranscodeTest, SameDtypeIsLossless) {
  for (KvDtype d : {KvDtype::kF16, KvDtype::kInt8, KvDtype::kInt4, KvDtype::kFp8E4M3}) {
    const KvGroupSpec spec = Spec(d);
    const BlockTranscoder t(spec, 8, d);
    EXPECT_EQ(t.cold_bytes(), t.pool_bytes());
    std::vector<uint8_t> pool = RandomBlock(spec, 8, 2), cold(t.cold_bytes()), back(t.pool_bytes());
    t.Encode(pool, cold);
    t.Decode(cold, back);
    // Padding is zeroed; every row byte survives.
    const BlockLayout layout(spec, 8);
    for (int i = 0; i < 2; ++i) {
      const LayerSections& l = layout.layer(i);
      for (int h = 0; h < 3; ++h) {
        for (int s = 0; s < 8; ++s) {
          EXPECT_EQ(0, std::memcmp(&pool[layout.KDataOffset(i, h, s)],
                                   &back[layout.KDataOffset(i, h, s)], l.k_row.data_bytes));
          EXPECT_EQ(0, std::memcmp(&pool[layout.VScaleOffset(i, h, s)],
                                   &back[layout.VScaleOffset(i, h, s)], l.v_row.scale_bytes));
        }
      }
    }
  }
}

TEST(BlockTranscodeTest, MixedPoolDtypesPerLayer) {
  KvGroupSpec spec = Spec(KvDtype::kF16, 3);
  spec.dtypes[1] = LayerKvDtypes{KvDtype::kBF16, KvDtype::kInt8};
  const BlockTranscoder t(spec, 4, KvDtype::kFp8E4M3);
  std::vector<uint8_t> pool = RandomBlock(spec, 4, 3), cold(t.cold_bytes()), back(t.pool_bytes());
  t.Encode(pool, cold);
  t.Decode(cold, back);
  const BlockLayout layout(spec, 4);
  std::vector<float> a(64), b(64);
  for (int i = 0; i < 3; ++i) {
    const LayerSections& l = layout.layer(i);
    DecodeRow(l.dtypes.v, &pool[layout.VDataOffset(i, 2, 3)], &pool[layout.VScaleOffset(i, 2, 3)],
              64, a.data());
    DecodeRow(l.dtypes.v, &back[layout.VDataOffset(i, 2, 3)], &back[layout.VScaleOffset(i, 2, 3)],
              64, b.data());
    for (int e = 0; e < 64; ++e) EXPECT_NEAR(a[size_t(e)], b[size_t(e)], 0.08f * std::abs(a[size_t(e)]) + 0.05f);
  }
}

}  // namespace
}  // namespace kvengine
