#include "planner/kv_plan.h"

#include <algorithm>
#include <cstdio>

#include "kv/block_layout.h"
#include "kv/pool_sizing.h"

namespace kvengine {

double NaiveElementBytes(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32: return 4;
    case KvDtype::kF16: return 2;
    case KvDtype::kBF16: return 2;
    case KvDtype::kFp8E4M3: return 1;
    case KvDtype::kFp8E5M2: return 1;
    case KvDtype::kInt8: return 1;
    case KvDtype::kInt4: return 0.5;
  }
  return 0;
}

namespace {

std::string Fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), format, a, b, c);
  return buf;
}

void AddNotes(KvPlan& p) {
  const ModelConfig& m = p.model;
  const int64_t b = p.options.block_size;
  if (m.is_mla()) {
    p.notes.push_back("MLA: each layer caches one latent of " +
                      std::to_string(m.kv_lora_rank + m.rope_dim) + " elements (kv_lora_rank " +
                      std::to_string(m.kv_lora_rank) + " + rope " + std::to_string(m.rope_dim) +
                      ") instead of K and V of hidden size " + std::to_string(m.n_embd) +
                      " each: " + Fmt("%.1fx less", 2.0 * m.n_embd / (m.kv_lora_rank + m.rope_dim)));
  } else {
    if (m.n_kv_heads < m.n_heads) {
      p.notes.push_back(std::string(m.n_kv_heads == 1 ? "MQA" : "GQA") + ": " +
                        std::to_string(m.n_kv_heads) + " KV heads serve " +
                        std::to_string(m.n_heads) + " query heads, " +
                        Fmt("%.0fx less KV than one K/V head per query head", double(m.n_heads) / m.n_kv_heads));
    }
    if (int64_t(m.n_heads) * m.head_dim_k != m.n_embd) {
      p.notes.push_back("head_dim x heads = " + std::to_string(int64_t(m.n_heads) * m.head_dim_k) +
                        " differs from hidden size " + std::to_string(m.n_embd));
    }
  }
  for (const GroupPlan& g : p.groups) {
    if (g.spec.windowed()) {
      p.notes.push_back(Fmt("sliding window %.0f on %.0f layers: a sequence holds at most %.0f "
                            "tokens' blocks there, whatever its length",
                            g.spec.window, double(g.spec.layers.size()),
                            double(BlocksPerSequence(g.spec, int(b), int64_t{1} << 40) * b)));
    }
    if (g.scale_bytes_per_block > 0) {
      p.notes.push_back(Fmt("quantization scales: %.0f bytes per block (%.2f%% of the block)",
                            double(g.scale_bytes_per_block),
                            100.0 * g.scale_bytes_per_block / g.bytes_per_block));
    }
    if (g.padding_bytes_per_block > 0) {
      p.notes.push_back(Fmt("64-byte section alignment: %.0f padding bytes per block (%.2f%%)",
                            double(g.padding_bytes_per_block),
                            100.0 * g.padding_bytes_per_block / g.bytes_per_block));
    }
  }
  if (p.options.ctx % b != 0) {
    p.notes.push_back(Fmt("block rounding: %.0f tokens occupy %.0f whole blocks of %.0f",
                          double(p.options.ctx), double((p.options.ctx + b - 1) / b), double(b)));
  }
  if (p.groups.size() > 1) {
    p.notes.push_back(std::to_string(p.groups.size()) +
                      " KV groups, each with its own sub-pool; memory is split in proportion "
                      "to one full-length sequence's need in each");
  }
  if (!p.dtypes.uniform()) p.notes.push_back("per-layer KV dtypes: " + p.dtypes.Describe());
}

}  // namespace

Result<KvPlan> PlanKv(const ModelConfig& model, const KvDtypeMap& dtypes,
                      const PlanOptions& options) {
  KvPlan p;
  p.model = model;
  p.dtypes = dtypes;
  p.options = options;
  if (p.options.ctx == 0) p.options.ctx = model.context_length;
  if (p.options.ctx < 1) return InvalidArgument("context length must be >= 1");
  if (p.options.batch < 1) return InvalidArgument("batch must be >= 1");
  if (p.options.block_size < 1 || p.options.block_size > 256) {
    return InvalidArgument("block size must be 1..256");
  }
  KV_ASSIGN_OR_RETURN(std::vector<KvGroupSpec> specs,
                      BuildKvGroups(model, dtypes, options.group_options));
  const int b = p.options.block_size;
  uint64_t per_block_all_groups = 0;
  for (const KvGroupSpec& s : specs) {
    const BlockLayout layout(s, b);
    GroupPlan g;
    g.spec = s;
    g.bytes_per_block = layout.bytes_per_block();
    g.padding_bytes_per_block = layout.padding_bytes();
    for (int i = 0; i < layout.num_layers(); ++i) {
      const LayerSections& l = layout.layer(i);
      g.scale_bytes_per_block +=
          uint64_t(s.num_kv_heads) * uint64_t(b) * (l.k_row.scale_bytes + l.v_row.scale_bytes);
    }
    g.blocks_per_sequence = BlocksPerSequence(s, b, p.options.ctx);
    per_block_all_groups += g.bytes_per_block;
    p.kv_bytes_per_sequence += uint64_t(g.blocks_per_sequence) * g.bytes_per_block;
    p.groups.push_back(g);
  }
  p.kv_bytes_per_token = (per_block_all_groups + uint64_t(b) - 1) / uint64_t(b);
  p.kv_bytes_total = uint64_t(p.options.batch) * p.kv_bytes_per_sequence;
  p.naive_bytes_per_token = model.NaiveBytesPerToken(NaiveElementBytes(dtypes.default_dtypes.k));
  if (options.memory_bytes) {
    KV_ASSIGN_OR_RETURN(PoolSizing sizing, SizePool(specs, b, *options.memory_bytes, p.options.ctx));
    p.pool_bytes = sizing.total_bytes;
    p.max_sequences = INT64_MAX;
    int64_t growing_tokens = INT64_MAX;
    for (size_t g = 0; g < specs.size(); ++g) {
      p.groups[g].num_blocks = sizing.num_blocks[g];
      p.max_sequences =
          std::min(p.max_sequences, sizing.num_blocks[g] / p.groups[g].blocks_per_sequence);
      if (!specs[g].windowed()) {
        growing_tokens = std::min(growing_tokens, int64_t(sizing.num_blocks[g]) * b);
      }
    }
    p.max_tokens = growing_tokens != INT64_MAX ? growing_tokens : p.max_sequences * p.options.ctx;
  }
  AddNotes(p);
  return p;
}

}  // namespace kvengine
