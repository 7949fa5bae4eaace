// Small builders shared by the kv tests.
#pragma once

#include <numeric>
#include <vector>

#include "kv/group_spec.h"

namespace kvengine::testing {

inline KvGroupSpec FullGroup(int layers, int heads, int head_dim, KvDtype dtype = KvDtype::kF32,
                             int first_layer = 0) {
  KvGroupSpec s;
  s.kind = KvGroupKind::kFull;
  s.layers.resize(size_t(layers));
  std::iota(s.layers.begin(), s.layers.end(), first_layer);
  s.num_kv_heads = heads;
  s.head_dim_k = s.head_dim_v = head_dim;
  s.dtypes.assign(size_t(layers), LayerKvDtypes{dtype, dtype});
  return s;
}

inline KvGroupSpec WindowGroup(int layers, int heads, int head_dim, int window, int sinks = 0,
                               KvDtype dtype = KvDtype::kF32, int first_layer = 0) {
  KvGroupSpec s = FullGroup(layers, heads, head_dim, dtype, first_layer);
  s.kind = KvGroupKind::kSlidingWindow;
  s.window = window;
  s.sink_tokens = sinks;
  return s;
}

inline std::vector<int32_t> Range(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

}  // namespace kvengine::testing
