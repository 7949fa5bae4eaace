// Builds the KvLayerView attention needs from the KV manager's layout of one model layer.
#pragma once

#include "kernels/attention/paged_attention.h"
#include "kv/kv_cache_manager.h"

namespace kvengine {

// The layer must be in some group of `kv`, whose pool must have storage.
KvLayerView LayerViewOf(const KvCacheManager& kv, int layer);

}  // namespace kvengine
