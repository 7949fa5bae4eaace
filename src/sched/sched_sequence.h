// SchedSequence: what the scheduler knows about one sequence (one choice of a request), and the
// order in which sequences are served and preempted.
//
// Owner: the Scheduler (scheduler.h); read by the engine loop thread between steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace kvengine {

enum class SeqStatus {
  kWaiting,  // Holds no KV; admitted (again) when the budget and the pool allow.
  kRunning,  // Holds KV in the KvCacheManager; scheduled every step its turn comes.
};

const char* SeqStatusName(SeqStatus status);  // "waiting", "running".

struct SchedSequence {
  SeqId id = 0;
  int priority = 0;          // Higher is served first and preempted last.
  int64_t arrival_ns = 0;    // Clock time of Scheduler::Add (fork children inherit it).
  uint64_t arrival_seq = 0;  // Add order, breaking arrival_ns ties (children inherit it).
  std::string cache_salt;
  // Every token of the sequence: prompt, then the sampled ones. The last may not be computed
  // yet (a decode step computes it).
  std::vector<int32_t> tokens;
  int64_t prompt_len = 0;
  // Leading tokens whose KV is written (the KvCacheManager's NumComputed for this sequence).
  int64_t num_computed = 0;
  // Seats in max_num_seqs: a request with n choices holds n from admission, so its fork can
  // never exceed the limit; Fork moves one seat to each child.
  int seats = 1;
  SeqStatus status = SeqStatus::kWaiting;
  int num_preemptions = 0;
  // Prompt tokens the prefix cache served the first time the sequence was admitted; -1 until
  // then. Usage reports it (`cached_tokens`).
  int64_t first_cached_tokens = -1;
  int64_t first_scheduled_ns = -1;  // Clock time of the first admission; -1 until then.

  int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
};

// Service order: higher priority first, then earlier arrival, then lower id (choices of one
// request in choice order). Preemption takes victims from the other end: lowest priority, then
// latest arrival.
inline bool ServedBefore(const SchedSequence& a, const SchedSequence& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.arrival_ns != b.arrival_ns) return a.arrival_ns < b.arrival_ns;
  if (a.arrival_seq != b.arrival_seq) return a.arrival_seq < b.arrival_seq;
  return a.id < b.id;
}

}  // namespace kvengine
