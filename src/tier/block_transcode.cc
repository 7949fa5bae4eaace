#include "tier/block_transcode.h"

#include <cstring>
#include <vector>

#include "quant/codec.h"

namespace kvengine {
namespace {

KvGroupSpec ColdSpec(KvGroupSpec spec, KvDtype cold) {
  for (LayerKvDtypes& d : spec.dtypes) d = LayerKvDtypes{cold, cold};
  return spec;
}

// Copies or re-encodes one row: decode from (da, sa) in dtype a, encode into (db, sb) in b.
void ConvertRow(KvDtype a, const uint8_t* da, const uint8_t* sa, KvDtype b, uint8_t* db,
                uint8_t* sb, int n, const RowFormat& fa, float* tmp) {
  if (a == b) {
    std::memcpy(db, da, fa.data_bytes);
    if (fa.scale_bytes) std::memcpy(sb, sa, fa.scale_bytes);
    return;
  }
  DecodeRow(a, da, sa, n, tmp);
  EncodeRow(b, tmp, n, db, sb);
}

}  // namespace

uint32_t TranscodedPayloadFormat(KvDtype dtype) { return 0x100u + static_cast<uint32_t>(dtype); }

BlockTranscoder::BlockTranscoder(const KvGroupSpec& pool_spec, int block_size, KvDtype cold)
    : spec_(pool_spec),
      dtype_(cold),
      pool_(pool_spec, block_size),
      cold_(ColdSpec(pool_spec, cold), block_size) {}

void BlockTranscoder::Encode(std::span<const uint8_t> pool, std::span<uint8_t> cold) const {
  Convert(pool_, pool, cold_, cold);
}

void BlockTranscoder::Decode(std::span<const uint8_t> cold, std::span<uint8_t> pool) const {
  Convert(cold_, cold, pool_, pool);
}

void BlockTranscoder::Convert(const BlockLayout& a, std::span<const uint8_t> from,
                              const BlockLayout& b, std::span<uint8_t> to) const {
  KV_CHECK(from.size() == a.bytes_per_block() && to.size() == b.bytes_per_block());
  std::memset(to.data(), 0, to.size());
  const int dk = spec_.head_dim_k, dv = spec_.head_dim_v;
  std::vector<float> tmp(size_t(std::max(dk, dv)));
  const uint8_t* src = from.data();
  uint8_t* dst = to.data();
  for (int i = 0; i < a.num_layers(); ++i) {
    const LayerSections& la = a.layer(i);
    const LayerSections& lb = b.layer(i);
    for (int h = 0; h < a.num_kv_heads(); ++h) {
      for (int s = 0; s < a.block_size(); ++s) {
        ConvertRow(la.dtypes.k, src + a.KDataOffset(i, h, s), src + a.KScaleOffset(i, h, s),
                   lb.dtypes.k, dst + b.KDataOffset(i, h, s), dst + b.KScaleOffset(i, h, s), dk,
                   la.k_row, tmp.data());
        if (spec_.kind == KvGroupKind::kMla) continue;
        ConvertRow(la.dtypes.v, src + a.VDataOffset(i, h, s), src + a.VScaleOffset(i, h, s),
                   lb.dtypes.v, dst + b.VDataOffset(i, h, s), dst + b.VScaleOffset(i, h, s), dv,
                   la.v_row, tmp.data());
      }
    }
  }
}

}  // namespace kvengine
