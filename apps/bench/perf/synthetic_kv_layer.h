// SyntheticKvLayer: one attention layer's K and V for one sequence of `context` tokens, filled
// with random encoded rows and laid out exactly as a KvLayerView
// (kernels/attention/paged_attention.h) describes, in one of two layouts:
//
//   paged       blocks of `block_size` tokens, sections as kv/block_layout.h lays out one layer
//               (K data, K scales, V data, V scales, each 64-byte aligned); the block table
//               lists the blocks in shuffled pool order, as a real pool is after churn.
//   contiguous  one block holding the whole context: per head, `context` consecutive rows; the
//               table has one entry. The same bytes a contiguous per-head cache would hold.
//
// `copies` independent copies (distinct memory, same values) let a benchmark cycle through a
// footprint far larger than the last-level cache, as a decode step over many layers does. In
// the paged layout the copies' blocks are interleaved in one shuffled pool.
//
// Values: row (head h, position p) is one of kPaletteRows random rows (normal(0, 1) elements,
// encoded once per dtype), chosen by a hash of (seed, h, p); so the paged and contiguous builds
// of one spec hold the same values, position by position.
//
// Ownership: owns its storage (2 MiB huge pages) and tables; move-only; read-only after Build, so
// any number of threads may read it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/attention/paged_attention.h"
#include "base/huge_pages.h"
#include "kvengine/status.h"
#include "quant/kv_dtype.h"

namespace kvengine {

enum class KvLayout { kPaged, kContiguous };

std::string_view KvLayoutName(KvLayout layout);  // "paged", "contiguous".
Result<KvLayout> ParseKvLayout(std::string_view name);

struct SyntheticKvSpec {
  KvDtype dtype = KvDtype::kF16;  // K and V.
  int num_kv_heads = 8;
  int head_dim = 128;  // K and V rows.
  int64_t context = 1024;
  KvLayout layout = KvLayout::kPaged;
  int block_size = 16;  // Paged only; contiguous uses one block of `context` tokens.
  int copies = 1;
  uint64_t seed = 1;
};

class SyntheticKvLayer {
 public:
  static constexpr int kPaletteRows = 1024;

  // Errors: an invalid spec, or the allocation failed.
  static Result<SyntheticKvLayer> Build(const SyntheticKvSpec& spec);

  const SyntheticKvSpec& spec() const { return spec_; }
  const KvLayerView& view() const { return view_; }
  // The table of copy c (0 <= c < copies): physical block ids in logical order.
  std::span<const int32_t> block_table(int c) const;
  // Bytes attention reads for one query that sees all `context` positions: K and V data and
  // scales of every KV head (section padding excluded).
  uint64_t kv_bytes_per_query() const;
  // Bytes of storage, all copies (padding included).
  uint64_t storage_bytes() const { return storage_.size(); }

  // The decoded values of one copy, as ContiguousAttentionRef takes them:
  // k, v: [context][num_kv_heads][head_dim] f32.
  void Decode(int c, std::vector<float>* k, std::vector<float>* v) const;

 private:
  SyntheticKvLayer() = default;

  SyntheticKvSpec spec_;
  KvLayerView view_;
  HugePageRegion storage_;  // [blocks of all copies][view_.bytes_per_block]
  int32_t blocks_per_copy_ = 0;
  std::vector<int32_t> tables_;  // [copies][blocks_per_copy_]
};

// Bytes of one layer's block of `block_size` tokens laid out as kv/block_layout.h does for a
// single layer (four sections, each 64-byte aligned), and the view describing it. Exposed for
// tests: for block sizes the pool supports it must agree with BlockLayout.
KvLayerView SingleLayerView(KvDtype dtype, int num_kv_heads, int head_dim, int block_size);

}  // namespace kvengine
