#include "kv/block_layout.h"

#include "base/check.h"
#include "base/checked_math.h"

namespace kvengine {

const char* KvGroupKindName(KvGroupKind kind) {
  switch (kind) {
    case KvGroupKind::kFull: return "full";
    case KvGroupKind::kSlidingWindow: return "sliding_window";
    case KvGroupKind::kMla: return "mla";
  }
  return "?";
}

std::string KvGroupSpec::Describe() const {
  std::string s;
  switch (kind) {
    case KvGroupKind::kFull:
      s = "full attention";
      break;
    case KvGroupKind::kSlidingWindow:
      s = "sliding window " + std::to_string(window);
      if (sink_tokens > 0) s += " + " + std::to_string(sink_tokens) + " sinks";
      break;
    case KvGroupKind::kMla:
      s = "MLA latent " + std::to_string(head_dim_k);
      break;
  }
  s += ", " + std::to_string(layers.size()) + " layers";
  if (kind != KvGroupKind::kMla) {
    s += ", " + std::to_string(num_kv_heads) + " KV heads x " + std::to_string(head_dim_k);
    if (head_dim_v != head_dim_k) s += "/" + std::to_string(head_dim_v);
  }
  return s;
}

BlockLayout::BlockLayout(const KvGroupSpec& spec, int block_size)
    : block_size_(block_size), num_kv_heads_(spec.num_kv_heads) {
  KV_CHECK(block_size >= 1 && block_size <= 256) << block_size;
  KV_CHECK(spec.num_kv_heads >= 1 && spec.head_dim_k >= 1);
  KV_CHECK(spec.dtypes.size() == spec.layers.size());
  const bool has_v = spec.kind != KvGroupKind::kMla;
  KV_CHECK(!has_v || spec.head_dim_v >= 1);
  const uint64_t rows = static_cast<uint64_t>(spec.num_kv_heads) * static_cast<uint64_t>(block_size);
  uint64_t offset = 0;
  // Appends a section of `bytes` for `dtype` and returns its offset.
  auto add_section = [&](uint64_t bytes, KvDtype dtype) {
    const uint64_t start = AlignUp(offset, kSectionAlign);
    padding_bytes_ += start - offset;
    offset = start + bytes;
    bytes_by_dtype_[static_cast<size_t>(dtype)] += bytes;
    return static_cast<size_t>(start);
  };
  layers_.reserve(spec.layers.size());
  for (const LayerKvDtypes& dt : spec.dtypes) {
    LayerSections l;
    l.dtypes = dt;
    l.k_row = RowFormatOf(dt.k, spec.head_dim_k);
    l.k_data = add_section(rows * l.k_row.data_bytes, dt.k);
    l.k_scale = add_section(rows * l.k_row.scale_bytes, dt.k);
    if (has_v) {
      l.v_row = RowFormatOf(dt.v, spec.head_dim_v);
      l.v_data = add_section(rows * l.v_row.data_bytes, dt.v);
      l.v_scale = add_section(rows * l.v_row.scale_bytes, dt.v);
    }
    layers_.push_back(l);
  }
  const uint64_t total = AlignUp(offset, kSectionAlign);
  padding_bytes_ += total - offset;
  bytes_per_block_ = static_cast<size_t>(total);
}

}  // namespace kvengine
