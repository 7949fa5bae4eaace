// The KV memory planner behind `kvengine plan`: bytes per token and per sequence, what fits in a
// memory budget, and why the exact figure differs from the naive 2 x layers x hidden x bytes.
// Every number comes from the same BlockLayout and SizePool the KV manager allocates with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "kv/group_spec.h"
#include "model/kv_groups.h"
#include "model/model_config.h"

namespace kvengine {

struct PlanOptions {
  int64_t ctx = 0;       // Tokens per sequence (prompt + output); 0 = the model's context.
  int64_t batch = 1;     // Sequences of ctx tokens for kv_bytes_total.
  int block_size = 16;
  std::optional<uint64_t> memory_bytes;  // KV memory budget: adds max_tokens / max_sequences.
  KvGroupOptions group_options;
};

struct GroupPlan {
  KvGroupSpec spec;
  uint64_t bytes_per_block = 0;
  uint64_t scale_bytes_per_block = 0;    // Quantization scales inside bytes_per_block.
  uint64_t padding_bytes_per_block = 0;  // Section alignment inside bytes_per_block.
  int64_t blocks_per_sequence = 0;       // At ctx (windowed groups: the bounded peak).
  int32_t num_blocks = 0;                // With a memory budget.
};

struct KvPlan {
  ModelConfig model;
  KvDtypeMap dtypes;
  PlanOptions options;  // ctx resolved.
  std::vector<GroupPlan> groups;
  uint64_t kv_bytes_per_token = 0;     // Every group holding the token: ceil(sum bpb / block).
  uint64_t kv_bytes_per_sequence = 0;  // Sum of blocks_per_sequence * bytes_per_block.
  uint64_t kv_bytes_total = 0;         // batch * kv_bytes_per_sequence.
  double naive_bytes_per_token = 0;    // 2 x layers x hidden x bytes(default dtype).
  // With a memory budget:
  uint64_t pool_bytes = 0;     // What the pool allocates (whole blocks of every group).
  int64_t max_tokens = 0;      // KV token slots of the growing groups (or sequences x ctx).
  int64_t max_sequences = 0;   // Sequences of ctx tokens that fit at once.
  std::vector<std::string> notes;  // Why exact != naive, one line each.
};

Result<KvPlan> PlanKv(const ModelConfig& model, const KvDtypeMap& dtypes,
                      const PlanOptions& options);

// Bytes of one element of `dtype`, counting only the data (int4 = 0.5), for the naive formula.
double NaiveElementBytes(KvDtype dtype);

}  // namespace kvengine
