// RunBenchServe: one `kvengine bench-serve` run against a server that is already up.
//   1. GET /v1/models: the model's name, max_model_len and vocab_size.
//   2. The synthetic workload for that model (token ids < vocab_size, every request within
//      max_model_len), as conversations with the length caps applied (bench_workload.h).
//   3. /metrics before; a sampler polls it during the run; /metrics after.
//   4. The load (load_client.h); the summary (serve_metrics.h).
// Errors: the server cannot be reached or describes no model, the workload cannot be made
// (a flag out of range for this model). Failed requests are counted, never an error.
//
// Threads: blocks the caller; see load_client.h for the threads it starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "bench/serve/bench_workload.h"
#include "bench/serve/http_target.h"
#include "bench/serve/load_client.h"
#include "bench/serve/serve_metrics.h"
#include "bench/kv/synthetic_workload.h"

namespace kvengine::loadgen {

struct BenchServeOptions {
  std::string url = "http://127.0.0.1:8080";
  KvWorkload workload = KvWorkload::kShareGpt;
  int64_t num_prompts = 100;      // Requests (multi_turn: turns in all).
  int turns = 5;                  // multi_turn: turns per conversation.
  int system_prompt_tokens = -1;  // shared_prefix; -1: min(1024, max_model_len / 2).
  uint64_t seed = 1;              // Workload and arrivals.
  LengthCaps caps;
  LoadOptions load;        // Traffic shape; load.model is filled from /v1/models when empty.
  int64_t vocab_size = 0;  // 0: the server's (GET /v1/models).
  std::chrono::milliseconds sample_interval{100};
};

struct BenchServeResult {
  BenchServeOptions options;  // As run (model, system prompt resolved).
  ServerInfo server;
  int64_t conversations = 0;
  LoadResult load;
  ServerObservations observations;
  BenchSummary summary;
};

Result<BenchServeResult> RunBenchServe(BenchServeOptions options, const ProgressFn& progress);

}  // namespace kvengine::loadgen
