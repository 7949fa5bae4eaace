// SimulateKv: runs a synthetic request stream against one KV policy in discrete scheduler steps,
// with no model: only KV memory decides who runs. The load always exceeds capacity (every
// turn-0 request is waiting at t = 0), so the numbers show how many sequences each policy fits.
//
// One step, in order:
//   1. Admission, strict FCFS: waiting requests are admitted in queue order while the backend
//      can hold their prefill; the first one that does not fit stops admission (no skipping,
//      so no request starves). The prefill is the prompt plus whatever the request had generated
//      before a preemption (recompute), stored and computed in this step.
//   2. Decode: every running sequence, oldest admission first, appends its next output token.
//      When an append does not fit, the most recently admitted running sequence is preempted
//      (released, its request put back in the waiting queue at its FCFS position, recomputed on
//      re-admission; its generated tokens are kept) and the append retried; a sequence that is
//      itself the newest preempts itself.
//   3. Measurement: running sequences and KV occupancy as the step's forward pass would see them.
//   4. Completion: sequences that have produced their output length are released; a
//      conversation's next turn arrives now.
// Waiting-queue order, FCFS by key: the turn's arrival order, or under session FCFS the
// conversation's index (a conversation's next turn goes ahead of conversations that arrived
// after it, as a session-affine scheduler does; otherwise every conversation's history is
// evicted before its next turn runs). A preempted request keeps its key: for single-turn
// workloads that is the front of the queue, since everything waiting arrived after it.
//
// Progress guarantee: a budget that holds one max_model_len sequence (MakeKvBackend checks it)
// lets the oldest running sequence always append, so every step makes progress; a run that
// somehow stalls returns an error instead of looping.
#pragma once

#include <cstdint>
#include <functional>

#include "kvengine/status.h"
#include "bench/kv/kv_backend.h"
#include "bench/kv/synthetic_workload.h"

namespace kvengine {

struct SimOptions {
  bool session_fcfs = true;  // Waiting-queue key: the conversation (true) or the turn (false).
};

struct SimResult {
  int64_t requests = 0;  // In the workload (every turn counts).
  int64_t requests_completed = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t loaded_steps = 0;  // Steps that ended admission with requests still waiting.
  int64_t peak_running = 0;  // Most sequences decoding in one step.
  // Sequences decoding, averaged over the steps under load (the drain at the end, where a few
  // long requests run alone for many steps, would otherwise measure the workload's tail rather
  // than the policy's capacity).
  double mean_running = 0;
  // Filled slots / allocated slots, averaged over steps in which anything was allocated.
  double utilization = 0;
  // Prefill, split by cause: each request's first admission (its prompt) and re-admissions
  // after preemption (prompt + tokens generated so far, recomputed).
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // Of which the prefix cache served.
  int64_t recompute_tokens = 0;
  int64_t cached_recompute_tokens = 0;  // Of which the prefix cache served.
  int64_t decoded_tokens = 0;           // Successful decode appends (= total output when complete).
  bool idle_at_end = false;             // The backend held nothing after the last release.
};

// (done, total): requests completed so far out of the workload's.
using SimProgressFn = std::function<void(int64_t done, int64_t total)>;

// `backend` must be fresh (idle). Errors only when a request cannot fit in an empty pool or the
// run stalls (an internal error).
Result<SimResult> SimulateKv(const Workload& workload, KvBackend* backend,
                             const SimOptions& options = {}, const SimProgressFn& progress = {});

}  // namespace kvengine
