// Configurations of the attention kernel tests (attention_kernel_test.cc,
// attention_invariance_test.cc): a KV shape and context (Config), the query positions checked, and
// one batch of them through a kernel (RunBatch).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_test_util.h"
#include "kernels/attention/paged_attention.h"

namespace kvengine::attention_test {

struct Config {
  KvDtype dtype;
  int n_heads, n_kv, head_dim, block_size;
  int64_t tokens;
  int window = 0, sinks = 0;
  std::optional<KvDtype> v_dtype = std::nullopt;  // V's dtype where it differs from K's (`dtype`).
};

inline std::string Describe(const Config& c) {
  return std::string(KvDtypeName(c.dtype)) +
         (c.v_dtype ? "/" + std::string(KvDtypeName(*c.v_dtype)) : std::string()) +
         " H=" + std::to_string(c.n_heads) + " Hkv=" + std::to_string(c.n_kv) +
         " d=" + std::to_string(c.head_dim) + " B=" + std::to_string(c.block_size) +
         " T=" + std::to_string(c.tokens) + " W=" + std::to_string(c.window) +
         " S=" + std::to_string(c.sinks);
}

inline KvShape ShapeOf(const Config& c) {
  KvShape s;
  s.k_dtype = c.dtype;
  s.v_dtype = c.v_dtype.value_or(c.dtype);
  s.num_kv_heads = c.n_kv;
  s.head_dim_k = s.head_dim_v = c.head_dim;
  s.block_size = c.block_size;
  s.window = c.window;
  s.sink_tokens = c.sinks;
  return s;
}

// Query positions to check: the first, one inside, the last.
inline std::vector<int64_t> PositionsOf(const Config& c) {
  return {0, c.tokens / 2 + 3, c.tokens - 1};
}

// Runs every position of `c` through `kernels` (one batch) and returns the outputs.
inline std::vector<float> RunBatch(const AttentionKernels& kernels, const OwnedKv& kv,
                                   const Config& c, const std::vector<float>& q, ThreadPool* pool) {
  const std::vector<int64_t> positions = PositionsOf(c);
  const size_t qn = size_t(c.n_heads) * size_t(c.head_dim);
  std::vector<float> out(positions.size() * qn, NAN);
  std::vector<AttentionQuery> queries;
  for (size_t i = 0; i < positions.size(); ++i) {
    queries.push_back({kv.table, q.data() + i * qn, positions[i], out.data() + i * qn});
  }
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  PagedAttentionBatchWith(kernels, kv.view, queries, c.n_heads, scale, pool);
  return out;
}

}  // namespace kvengine::attention_test
