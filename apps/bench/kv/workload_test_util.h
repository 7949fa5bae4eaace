// Small builders shared by the workload tests.
#pragma once

#include <numeric>
#include <vector>

#include "kv/group_spec.h"

namespace kvengine::workload_testing {

// A full-attention group of `layers` layers (numbered from `first_layer`), `heads` KV heads of
// `head_dim` elements, every K and V row in `dtype`.
inline KvGroupSpec FullGroup(int layers, int heads, int head_dim, KvDtype dtype,
                             int first_layer = 0) {
  KvGroupSpec s;
  s.kind = KvGroupKind::kFull;
  s.layers.resize(static_cast<size_t>(layers));
  std::iota(s.layers.begin(), s.layers.end(), first_layer);
  s.num_kv_heads = heads;
  s.head_dim_k = head_dim;
  s.head_dim_v = head_dim;
  s.dtypes.assign(static_cast<size_t>(layers), LayerKvDtypes{dtype, dtype});
  return s;
}

}  // namespace kvengine::workload_testing
