// Synthetic paged KV for attention tests and benchmarks: a KvLayerView over caller memory with
// the block layout of kv/block_layout.h (one layer, 64-byte aligned sections), blocks placed in a
// shuffled order, rows filled with random values encoded by the codecs, and the decoded rows kept
// contiguous for ContiguousAttentionRef.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/paged_attention.h"
#include "quant/codec.h"
#include "quant/codec_ref.h"

namespace kvengine::attention_test {

struct KvShape {
  KvDtype k_dtype = KvDtype::kF16;
  KvDtype v_dtype = KvDtype::kF16;
  int num_kv_heads = 2;
  int head_dim_k = 64;
  int head_dim_v = 64;
  int block_size = 16;  // A value >= the context with one block: the contiguous layout.
  int window = 0;
  int sink_tokens = 0;
};

inline size_t AlignUp(size_t x) { return (x + 63) / 64 * 64; }

// The view's layout for `shape`; pool is left null.
inline KvLayerView LayoutOf(const KvShape& s) {
  KvLayerView v;
  v.block_size = s.block_size;
  v.num_kv_heads = s.num_kv_heads;
  v.head_dim_k = s.head_dim_k;
  v.head_dim_v = s.head_dim_v;
  v.k_dtype = s.k_dtype;
  v.v_dtype = s.v_dtype;
  const RowFormat kf = RowFormatOf(s.k_dtype, s.head_dim_k);
  const RowFormat vf = RowFormatOf(s.v_dtype, s.head_dim_v);
  v.k_row_bytes = kf.data_bytes;
  v.k_scale_bytes = kf.scale_bytes;
  v.v_row_bytes = vf.data_bytes;
  v.v_scale_bytes = vf.scale_bytes;
  const size_t rows = size_t(s.num_kv_heads) * size_t(s.block_size);
  v.k_data = 0;
  v.k_scale = AlignUp(rows * kf.data_bytes);
  v.v_data = v.k_scale + AlignUp(rows * kf.scale_bytes);
  v.v_scale = v.v_data + AlignUp(rows * vf.data_bytes);
  v.bytes_per_block = v.v_scale + AlignUp(rows * vf.scale_bytes);
  v.window = s.window;
  v.sink_tokens = s.sink_tokens;
  return v;
}

inline int64_t BlocksFor(const KvShape& s, int64_t tokens) {
  return (tokens + s.block_size - 1) / s.block_size;
}

// K/V rows for `tokens` positions written into `pool` (BlocksFor * bytes_per_block bytes), blocks
// in a shuffled order (*table); k/v get the decoded rows, [tokens][num_kv_heads][head_dim]
// (both may be null: benchmarks skip them).
// Values: normal(0, 1), every 7th K row scaled by 8 (outliers), so nothing is zero.
inline KvLayerView FillKv(const KvShape& s, int64_t tokens, uint32_t seed, uint8_t* pool,
                          std::vector<int32_t>* table, std::vector<float>* k,
                          std::vector<float>* v) {
  KvLayerView view = LayoutOf(s);
  view.pool = pool;
  const int64_t blocks = BlocksFor(s, tokens);
  table->resize(size_t(blocks));
  std::iota(table->begin(), table->end(), 0);
  std::mt19937 shuffle_rng(seed);  // Apart from the values' generator: the layout does not
  std::shuffle(table->begin(), table->end(), shuffle_rng);  // change the rows.
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t dk = size_t(s.head_dim_k), dv = size_t(s.head_dim_v), nkv = size_t(s.num_kv_heads);
  if (k != nullptr) k->assign(size_t(tokens) * nkv * dk, 0.0f);
  if (v != nullptr) v->assign(size_t(tokens) * nkv * dv, 0.0f);
  std::vector<float> x(std::max(dk, dv));
  for (int64_t t = 0; t < tokens; ++t) {
    uint8_t* block = pool + size_t((*table)[size_t(t / s.block_size)]) * view.bytes_per_block;
    const size_t slot = size_t(t % s.block_size);
    for (size_t h = 0; h < nkv; ++h) {
      const size_t row = h * size_t(s.block_size) + slot;
      for (size_t i = 0; i < dk; ++i) x[i] = nd(rng) * (t % 7 == 0 ? 8.0f : 1.0f);
      uint8_t* kd = block + view.k_data + row * view.k_row_bytes;
      uint8_t* ks = block + view.k_scale + row * view.k_scale_bytes;
      EncodeRow(s.k_dtype, x.data(), int(dk), kd, ks);
      if (k != nullptr) {
        ref::DecodeRow(s.k_dtype, kd, ks, int(dk), k->data() + (size_t(t) * nkv + h) * dk);
      }
      for (size_t i = 0; i < dv; ++i) x[i] = nd(rng);
      uint8_t* vd = block + view.v_data + row * view.v_row_bytes;
      uint8_t* vs = block + view.v_scale + row * view.v_scale_bytes;
      EncodeRow(s.v_dtype, x.data(), int(dv), vd, vs);
      if (v != nullptr) {
        ref::DecodeRow(s.v_dtype, vd, vs, int(dv), v->data() + (size_t(t) * nkv + h) * dv);
      }
    }
  }
  return view;
}

// A synthetic KV that owns its pool.
struct OwnedKv {
  std::vector<uint8_t> pool;
  std::vector<int32_t> table;
  std::vector<float> k, v;
  KvLayerView view;
};

inline OwnedKv MakeKv(const KvShape& s, int64_t tokens, uint32_t seed) {
  OwnedKv kv;
  kv.pool.assign(size_t(BlocksFor(s, tokens)) * LayoutOf(s).bytes_per_block, 0xEE);
  kv.view = FillKv(s, tokens, seed, kv.pool.data(), &kv.table, &kv.k, &kv.v);
  return kv;
}

// Chunk rows as the kernel hands them over to its steps (attention_steps.h): n rows (padded to
// whole score micro-tiles by repeating the last) with their run starts. shuffled: each row from a
// random position, so no two rows share a run (the scales' one-vector loads are not taken).
struct ChunkRows {
  std::vector<KvRowRefs> rows;
  uint64_t run_starts = 0;
};

ChunkRows RowsOf(const OwnedKv& kv, int kv_head, int64_t begin, int n, bool shuffled,
                 std::mt19937* rng) {
  ChunkRows c;
  c.rows.resize(size_t(kAttentionChunk + kAttentionPosTile - 1));
  AttentionItem item;
  item.block_table = kv.table;
  item.kv_head = kv_head;
  if (!shuffled) {
    item.begin[0] = begin;
    item.end[0] = begin + n;
    ItemRowWalker walk(kv.view, item);
    walk.Next(n, c.rows.data(), &c.run_starts);
  } else {
    const int64_t tokens = int64_t(kv.table.size()) * kv.view.block_size;
    std::uniform_int_distribution<int64_t> pos(0, tokens - 1);
    for (int t = 0; t < n; ++t) {
      item.begin[0] = pos(*rng);
      item.end[0] = item.begin[0] + 1;
      ItemRowWalker walk(kv.view, item);
      walk.Next(1, &c.rows[size_t(t)]);
    }
    c.run_starts = n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
  }
  for (int t = n; t % kAttentionPosTile != 0; ++t) c.rows[size_t(t)] = c.rows[size_t(n - 1)];
  return c;
}

// The value step's inputs for a chunk of n rows (attention_steps.h): softmax weights in [0, 1]
// with one 1 per head (as after the max), NaN past n (the steps must not read them); rescale
// factors in [0.25, 1.25); accumulators [heads][stride] of normal(0, 1) values.
struct ValueStepInputs {
  std::vector<float> p, alpha, acc;
  size_t stride = 0;
};

inline ValueStepInputs RandomValueStepInputs(int heads, int n, size_t dv, std::mt19937* rng) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ValueStepInputs in;
  in.p.assign(size_t(4) * kAttentionChunk, std::numeric_limits<float>::quiet_NaN());
  in.alpha.resize(size_t(heads));
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t) in.p[size_t(h) * kAttentionChunk + size_t(t)] = unit(*rng);
    in.p[size_t(h) * kAttentionChunk + size_t(n / 2)] = 1.0f;
    in.alpha[size_t(h)] = 0.25f + unit(*rng);
  }
  in.stride = dv + 8;
  in.acc.resize(size_t(heads) * in.stride);
  for (float& x : in.acc) x = nd(*rng);
  return in;
}

// Whether a and b are the same float bits.
inline bool SameBits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Whether element(0 .. d - 1) is a permutation of 0 .. d - 1 (the steps' element orders).
inline bool IsPermutation(size_t (*element)(size_t), size_t d) {
  std::vector<int> seen(d, 0);
  for (size_t i = 0; i < d; ++i) {
    if (element(i) >= d) return false;
    ++seen[element(i)];
  }
  return std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; });
}

}  // namespace kvengine::attention_test
