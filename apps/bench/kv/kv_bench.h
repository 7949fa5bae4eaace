// The workload benchmark behind `kvengine bench kv`: the same synthetic request streams under
// several KV memory policies, with no model — the REAL KvCacheManager over a metadata-only pool
// (allocate_storage = false) against a contiguous max-length reservation, under one fixed KV byte
// budget, at a load that always exceeds capacity (see kv_simulator.h for the step loop).
//
// Defaults (KvBenchOptions): model preset llama-3-8b, f16 KV, block 16 tokens, KV budget 4 GiB
// (= 32768 token slots at 128 KiB per token; contiguous: 8 sequences of 4096), max_model_len
// 4096, 1000 requests (multi_turn: 200 conversations x 5 turns), shared prompt 1024 tokens,
// seed 1, session FCFS, admission watermark 0.01, all three workloads (sharegpt, shared_prefix,
// multi_turn) x all three policies (paged_prefix, paged_no_prefix, contiguous). The default run
// takes about 2 s in Release on one core (most of it SHA-256 block hashing of paged_prefix).
//
// Metrics, per (workload, policy):
//   peak_concurrent_sequences  most sequences decoding in one step. With every request waiting
//                              at t = 0 it is reached in the first steps, while all prompts are
//                              still short (the growing sequences are preempted later)
//   mean_concurrent_sequences  sequences decoding per step, averaged over the steps in which
//                              requests were still waiting (the sustained capacity; the drain at
//                              the end, a few long requests alone, is left out)
//   utilization                filled token slots / allocated token slots, averaged over steps:
//                              used blocks x block size for paged policies (a block shared
//                              through the prefix cache counts once), reserved regions x
//                              max_model_len for contiguous
//   prefix_hit_rate            prompt tokens served by the prefix cache / prompt tokens admitted,
//                              over each request's first admission (re-admissions after
//                              preemption are counted apart, as recompute tokens); 0 for
//                              policies without a prefix cache. Under this overload a multi-turn
//                              follow-up waits for room while running sequences' growth evicts
//                              its history (LRU), so it hits well below the ideal
//   capacity_ratio             peak / contiguous's peak on the same workload (contiguous's
//                              capacity in sequences when contiguous was not run)
//
// Thread-safety: RunKvBench is a pure function of its options; calls may run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "model/kv_groups.h"
#include "model/model_config.h"
#include "quant/kv_dtype.h"
#include "bench/kv/kv_backend.h"
#include "bench/kv/synthetic_workload.h"

namespace kvengine {

struct KvBenchOptions {
  std::string model = "llama-3-8b";
  static constexpr const char* kModelHelp = "model preset whose KV shape sizes the pool";
  // A model the caller resolved itself (e.g. from a GGUF file's metadata): used instead of looking
  // `model` up as a preset, which then only names it in the output.
  std::optional<ModelConfig> model_config;
  KvDtype kv_dtype = KvDtype::kF16;
  static constexpr const char* kKvDtypeHelp = "KV cache number format (f16, bf16, fp8, int8, int4)";
  std::optional<KvDtypeMap> kv_dtypes;  // Per-layer dtypes (--kv-dtype-map); overrides kv_dtype.
  int block_size = 16;
  static constexpr const char* kBlockSizeHelp = "tokens per KV block of the paged policies";
  uint64_t kv_memory_bytes = uint64_t{4} << 30;
  static constexpr const char* kKvMemoryHelp = "KV memory budget every policy gets (bytes)";
  int64_t max_model_len = 4096;
  static constexpr const char* kMaxModelLenHelp =
      "longest sequence (prompt + output); contiguous reserves this much per sequence";
  int64_t num_requests = 1000;
  static constexpr const char* kNumRequestsHelp =
      "requests per workload (multi_turn: conversations = requests / turns)";
  int turns = 5;
  static constexpr const char* kTurnsHelp = "multi_turn: turns per conversation";
  int system_prompt_tokens = 1024;
  static constexpr const char* kSystemPromptHelp = "shared_prefix: tokens of the shared prompt";
  uint64_t seed = 1;
  static constexpr const char* kSeedHelp = "random seed of the request streams";
  double watermark = 0.01;
  static constexpr const char* kWatermarkHelp =
      "paged: fraction of blocks admission leaves for running sequences to grow (vLLM: 0.01)";
  bool session_fcfs = true;
  static constexpr const char* kSessionFcfsHelp =
      "queue a conversation's next turn by the conversation's arrival (else by its own)";
  std::vector<KvWorkload> workloads{std::begin(kAllKvWorkloads), std::end(kAllKvWorkloads)};
  static constexpr const char* kWorkloadsHelp =
      "workloads to run: sharegpt, shared_prefix, multi_turn";
  std::vector<KvPolicy> policies{std::begin(kAllKvPolicies), std::end(kAllKvPolicies)};
  static constexpr const char* kPoliciesHelp =
      "KV policies to run: paged_prefix, paged_no_prefix, contiguous";
};

struct KvBenchRow {
  std::string workload;
  std::string policy;
  int64_t requests = 0;  // In the workload.
  int64_t requests_completed = 0;
  int64_t steps = 0;  // Scheduler steps (one decoded token per running sequence).
  int64_t preemptions = 0;
  int64_t peak_concurrent_sequences = 0;
  double mean_concurrent_sequences = 0;
  double utilization = 0;               // 0..1
  double prefix_hit_rate = 0;           // 0..1
  double capacity_ratio = 0;            // Peak / contiguous's peak on the same workload.
  int64_t prompt_tokens = 0;            // Prompts admitted (each request's first admission).
  int64_t cached_prompt_tokens = 0;     // Of which the prefix cache served.
  int64_t recompute_tokens = 0;         // Re-admitted after preemption (prompt + generated).
  int64_t cached_recompute_tokens = 0;  // Of which the prefix cache served.
  int64_t kv_token_slots = 0;           // Token capacity of the budget under this policy.
  double seconds = 0;                   // Wall time of this (workload, policy) run.
};

// (done, total): requests completed over all runs so far, out of all runs' requests.
using KvBenchProgressFn = std::function<void(int64_t done, int64_t total)>;

// One row per (workload, policy), workloads outer, in the options' order. Errors for options no
// run can satisfy (unknown model, a budget that holds no max_model_len sequence, ...).
Result<std::vector<KvBenchRow>> RunKvBench(const KvBenchOptions& options,
                                           const KvBenchProgressFn& progress = {});

// "f16", or the per-layer map's description when kv_dtypes is set.
std::string KvBenchDtypeName(const KvBenchOptions& options);

}  // namespace kvengine
