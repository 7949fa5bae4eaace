#include "bench/perf/synthetic_kv_layer.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "base/check.h"
#include "quant/codec.h"

namespace kvengine {
namespace {

constexpr size_t kAlign = 64;  // kv/block_layout.h kSectionAlign.

size_t AlignUp64(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Which palette row holds (head, pos) of K (which = 0) or V (which = 1).
int PaletteIndex(uint64_t seed, int which, int head, int64_t pos) {
  const uint64_t key =
      (seed * 0x100000001b3ULL) ^ (uint64_t(which) << 62) ^ (uint64_t(head) << 40) ^ uint64_t(pos);
  return int(SplitMix64(key) % uint64_t(SyntheticKvLayer::kPaletteRows));
}

// Encoded random rows: data [kPaletteRows][row.data_bytes], scale [kPaletteRows][row.scale_bytes].
struct Palette {
  std::vector<uint8_t> data;
  std::vector<uint8_t> scale;
};

Palette MakePalette(KvDtype dtype, int n, const RowFormat& row, std::mt19937_64& rng) {
  Palette p;
  p.data.resize(size_t(SyntheticKvLayer::kPaletteRows) * row.data_bytes);
  p.scale.resize(size_t(SyntheticKvLayer::kPaletteRows) * row.scale_bytes);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int r = 0; r < SyntheticKvLayer::kPaletteRows; ++r) {
    for (float& v : x) v = normal(rng);
    EncodeRow(dtype, x.data(), n, p.data.data() + size_t(r) * row.data_bytes,
              row.scale_bytes ? p.scale.data() + size_t(r) * row.scale_bytes : nullptr);
  }
  return p;
}

}  // namespace

std::string_view KvLayoutName(KvLayout layout) {
  switch (layout) {
    case KvLayout::kPaged:
      return "paged";
    case KvLayout::kContiguous:
      return "contiguous";
  }
  return "?";
}

Result<KvLayout> ParseKvLayout(std::string_view name) {
  if (name == "paged") return KvLayout::kPaged;
  if (name == "contiguous") return KvLayout::kContiguous;
  return InvalidArgument("unknown KV layout '" + std::string(name) +
                         "' (known: paged, contiguous)");
}

KvLayerView SingleLayerView(KvDtype dtype, int num_kv_heads, int head_dim, int block_size) {
  const RowFormat row = RowFormatOf(dtype, head_dim);
  const size_t rows = size_t(num_kv_heads) * size_t(block_size);
  KvLayerView v;
  v.block_size = block_size;
  v.num_kv_heads = num_kv_heads;
  v.head_dim_k = head_dim;
  v.head_dim_v = head_dim;
  v.k_dtype = dtype;
  v.v_dtype = dtype;
  v.k_row_bytes = v.v_row_bytes = row.data_bytes;
  v.k_scale_bytes = v.v_scale_bytes = row.scale_bytes;
  // Sections in block order: K data, K scales, V data, V scales, each starting 64-byte aligned.
  size_t offset = 0;
  auto section = [&](size_t bytes) {
    const size_t start = AlignUp64(offset);
    offset = start + bytes;
    return start;
  };
  v.k_data = section(rows * row.data_bytes);
  v.k_scale = section(rows * row.scale_bytes);
  v.v_data = section(rows * row.data_bytes);
  v.v_scale = section(rows * row.scale_bytes);
  v.bytes_per_block = AlignUp64(offset);
  return v;
}

Result<SyntheticKvLayer> SyntheticKvLayer::Build(const SyntheticKvSpec& spec) {
  if (spec.num_kv_heads < 1 || spec.num_kv_heads > 4096 || spec.head_dim < 1 ||
      spec.head_dim > 65536) {
    return InvalidArgument("KV heads must be 1..4096 and head_dim 1..65536");
  }
  if (spec.context < 1 || spec.context > (int64_t{1} << 24)) {
    return InvalidArgument("context must be 1..16777216 tokens, not " +
                           std::to_string(spec.context));
  }
  if (spec.layout == KvLayout::kPaged && (spec.block_size < 1 || spec.block_size > 256)) {
    return InvalidArgument("block size must be 1..256");
  }
  if (spec.copies < 1 || spec.copies > 65536) return InvalidArgument("copies must be 1..65536");
  SyntheticKvLayer l;
  l.spec_ = spec;
  const int block_size = spec.layout == KvLayout::kPaged ? spec.block_size : int(spec.context);
  l.view_ = SingleLayerView(spec.dtype, spec.num_kv_heads, spec.head_dim, block_size);
  l.blocks_per_copy_ = int32_t((spec.context + block_size - 1) / block_size);
  const int64_t total_blocks = int64_t(l.blocks_per_copy_) * spec.copies;
  const long double bytes = (long double)(total_blocks) * (long double)(l.view_.bytes_per_block);
  if (bytes > (long double)(uint64_t{1} << 40)) return OutOfRange("synthetic KV exceeds 1 TiB");
  KV_ASSIGN_OR_RETURN(l.storage_,
                      HugePageRegion::Allocate(size_t(total_blocks) * l.view_.bytes_per_block));
  l.view_.pool = l.storage_.data();

  // Block tables: a permutation of the pool for paged (copy c takes the c-th slice), identity
  // for contiguous (one block per copy).
  std::mt19937_64 shuffle_rng(spec.seed);
  std::vector<int32_t> order(static_cast<size_t>(total_blocks));
  for (int64_t i = 0; i < total_blocks; ++i) order[size_t(i)] = int32_t(i);
  if (spec.layout == KvLayout::kPaged) std::shuffle(order.begin(), order.end(), shuffle_rng);
  l.tables_ = std::move(order);

  // The palettes come from their own generator: the same for both layouts.
  const RowFormat row = RowFormatOf(spec.dtype, spec.head_dim);
  std::mt19937_64 rng(spec.seed ^ 0x5eedULL);
  const Palette k_rows = MakePalette(spec.dtype, spec.head_dim, row, rng);
  const Palette v_rows = MakePalette(spec.dtype, spec.head_dim, row, rng);
  const KvLayerView& v = l.view_;
  for (int c = 0; c < spec.copies; ++c) {
    const std::span<const int32_t> table = l.block_table(c);
    for (int32_t j = 0; j < l.blocks_per_copy_; ++j) {
      uint8_t* block = l.storage_.data() + size_t(table[size_t(j)]) * v.bytes_per_block;
      for (int h = 0; h < spec.num_kv_heads; ++h) {
        for (int s = 0; s < block_size; ++s) {
          const int64_t pos = int64_t(j) * block_size + s;
          if (pos >= spec.context) break;  // The tail of the last block stays zero.
          const size_t r = size_t(h) * size_t(block_size) + size_t(s);
          const size_t kp = size_t(PaletteIndex(spec.seed, 0, h, pos));
          const size_t vp = size_t(PaletteIndex(spec.seed, 1, h, pos));
          std::memcpy(block + v.k_data + r * row.data_bytes,
                      k_rows.data.data() + kp * row.data_bytes, row.data_bytes);
          std::memcpy(block + v.v_data + r * row.data_bytes,
                      v_rows.data.data() + vp * row.data_bytes, row.data_bytes);
          if (row.scale_bytes == 0) continue;
          std::memcpy(block + v.k_scale + r * row.scale_bytes,
                      k_rows.scale.data() + kp * row.scale_bytes, row.scale_bytes);
          std::memcpy(block + v.v_scale + r * row.scale_bytes,
                      v_rows.scale.data() + vp * row.scale_bytes, row.scale_bytes);
        }
      }
    }
  }
  return l;
}

std::span<const int32_t> SyntheticKvLayer::block_table(int c) const {
  KV_CHECK(c >= 0 && c < spec_.copies) << c;
  return std::span<const int32_t>(tables_).subspan(size_t(c) * size_t(blocks_per_copy_),
                                                   size_t(blocks_per_copy_));
}

uint64_t SyntheticKvLayer::kv_bytes_per_query() const {
  const uint64_t per_row =
      view_.k_row_bytes + view_.k_scale_bytes + view_.v_row_bytes + view_.v_scale_bytes;
  return per_row * uint64_t(spec_.num_kv_heads) * uint64_t(spec_.context);
}

void SyntheticKvLayer::Decode(int c, std::vector<float>* k, std::vector<float>* v) const {
  const size_t d = size_t(spec_.head_dim), heads = size_t(spec_.num_kv_heads);
  k->assign(size_t(spec_.context) * heads * d, 0.0f);
  v->assign(k->size(), 0.0f);
  const std::span<const int32_t> table = block_table(c);
  const int bs = view_.block_size;
  for (int64_t pos = 0; pos < spec_.context; ++pos) {
    const uint8_t* block = view_.pool + size_t(table[size_t(pos / bs)]) * view_.bytes_per_block;
    const size_t s = size_t(pos % bs);
    for (size_t h = 0; h < heads; ++h) {
      const size_t r = h * size_t(bs) + s;
      float* kd = k->data() + (size_t(pos) * heads + h) * d;
      float* vd = v->data() + (size_t(pos) * heads + h) * d;
      DecodeRow(spec_.dtype, block + view_.k_data + r * view_.k_row_bytes,
                block + view_.k_scale + r * view_.k_scale_bytes, int(d), kd);
      DecodeRow(spec_.dtype, block + view_.v_data + r * view_.v_row_bytes,
                block + view_.v_scale + r * view_.v_scale_bytes, int(d), vd);
    }
  }
}

}  // namespace kvengine
