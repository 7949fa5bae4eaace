#include "kernels/attention/kv_layer_view.h"

namespace kvengine {

KvLayerView LayerViewOf(const KvCacheManager& kv, int layer) {
  const int g = kv.GroupOfLayer(layer);
  KV_CHECK(g >= 0) << "layer " << layer << " has no KV group";
  const KvGroup& grp = kv.group(g);
  KV_CHECK(grp.has_storage());
  const BlockLayout& lay = grp.layout();
  const LayerSections& sec = lay.layer(kv.SlotOfLayer(layer));
  const KvGroupSpec& spec = grp.spec();
  KvLayerView v;
  v.pool = grp.storage();
  v.bytes_per_block = lay.bytes_per_block();
  v.block_size = lay.block_size();
  v.num_kv_heads = spec.num_kv_heads;
  v.head_dim_k = spec.head_dim_k;
  v.head_dim_v = spec.head_dim_v;
  v.k_dtype = sec.dtypes.k;
  v.v_dtype = sec.dtypes.v;
  v.k_data = sec.k_data;
  v.k_scale = sec.k_scale;
  v.v_data = sec.v_data;
  v.v_scale = sec.v_scale;
  v.k_row_bytes = sec.k_row.data_bytes;
  v.k_scale_bytes = sec.k_row.scale_bytes;
  v.v_row_bytes = sec.v_row.data_bytes;
  v.v_scale_bytes = sec.v_row.scale_bytes;
  if (spec.windowed()) {
    v.window = spec.window;
    v.sink_tokens = spec.sink_tokens;
  }
  return v;
}

}  // namespace kvengine
