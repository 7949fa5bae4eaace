// Engine internals shared by engine.cc (public API and Submit validation), engine_loop.cc (the
// loop thread: steps, sampling, events) and engine_capacity.cc (KV sizing and messages).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/thread_pool.h"
#include "kvengine/engine.h"
#include "sched/scheduler.h"

namespace kvengine::engine_internal {

// The KV pool's shape, copied at Create so Submit threads can size requests without touching
// the loop-owned KvCacheManager. Immutable.
struct KvCapacity {
  std::vector<KvGroupSpec> groups;
  std::vector<int32_t> num_blocks;        // [group]
  std::vector<uint64_t> bytes_per_block;  // [group]
  int block_size = 0;
  int64_t max_model_len = 0;
  uint64_t pool_bytes = 0;
  bool contiguous = false;  // Admission reserves max_model_len per sequence.

  static KvCapacity Of(const KvCacheManager& kv, bool contiguous);
  // KV bytes of one token held by every group: ceil(sum of bytes per block / block size), the
  // planner's kv_bytes_per_token.
  uint64_t BytesPerToken() const;
  // Sequences of max_model_len tokens the pool holds at once.
  int64_t MaxSequencesAtMaxLen() const;
  // [group] blocks a request holds at most: n choices of prompt + max_tokens tokens sharing the
  // prompt's full blocks (contiguous: n reservations of max_model_len).
  std::vector<int64_t> RequestBlocks(int64_t prompt, int64_t max_tokens, int n) const;
  // OutOfRange when the request can never fit, saying what it needs, what exists and what would
  // make it fit.
  Status CheckRequestFits(int64_t prompt, int64_t max_tokens, int n) const;
  std::string Describe() const;
};

// One choice of a request. Engine thread only.
struct ChoiceState {
  explicit ChoiceState(const SamplingParams& p) : sampler(p) {}
  SeqId seq = 0;
  bool exists = false;    // Choice 0 from submission, the others from the fork.
  bool finished = false;  // Its final event went out.
  Sampler sampler;
  int64_t completion_tokens = 0;
  int64_t computed_hwm = 0;    // Positions computed at least once (recompute accounting).
  int64_t last_token_ns = -1;  // For inter-token latency.
};

// A request from Submit to its last final event. Engine thread only once queued.
struct ActiveRequest {
  RequestId id = 0;
  RequestParams params;
  std::shared_ptr<const EventCallback> on_event;
  int64_t arrival_ns = 0;
  std::vector<ChoiceState> choices;   // [n]
  bool forked = false;                // Choices 1..n-1 exist.
  int64_t cached_prompt_tokens = -1;  // Prefix-cache hits of the first admission.
  bool first_token_seen = false;
  int num_finished = 0;    // Choices whose final event went out.
  bool cancelled = false;  // A choice ended with kCancelled.
  bool failed = false;     // A choice ended with kError.
};

// An event waiting for delivery at the end of the step (after the stats are published).
struct PendingEvent {
  std::shared_ptr<const EventCallback> callback;
  RequestEvent event;
};

// How many requests would wait for a seat (none free for them) with one more of n choices,
// given the requests not running yet (`pending`, holding `pending_seqs` unfinished choices)
// and the seats the running ones hold. Requests take free seats in arrival order, so only those
// beyond the free seats wait; 0 when the new one fits in a free seat behind the pending ones.
inline int64_t WaitingWith(int64_t pending, int64_t pending_seqs, int64_t running_seqs, int n,
                           int max_num_seqs) {
  const int64_t free_seats = std::max<int64_t>(0, int64_t{max_num_seqs} - running_seqs);
  if (pending_seqs + n <= free_seats) return 0;
  return std::max<int64_t>(1, pending + 1 - free_seats);
}

// Sequence ids: request id * kSeqsPerRequest + choice.
inline constexpr uint64_t kSeqsPerRequest = 256;
static_assert(kMaxChoices <= static_cast<int>(kSeqsPerRequest));

}  // namespace kvengine::engine_internal

namespace kvengine {

struct Engine::Impl {
  using ActiveRequest = engine_internal::ActiveRequest;
  using ChoiceState = engine_internal::ChoiceState;

  // Immutable after Create.
  std::shared_ptr<const Model> model;
  EngineOptions options;
  const Clock* clock = nullptr;
  engine_internal::KvCapacity capacity;

  // Loop thread only (or the Stop() caller once the loop has joined). The tiers are declared
  // before the KV manager, which holds them as its hook, so they outlive it.
  std::unique_ptr<TierManager> tiers;
  std::unique_ptr<KvCacheManager> kv;
  // Requests waiting for a tier prefetch before they enter the scheduler: ticket -> request.
  std::unordered_map<uint64_t, RequestId> parked;
  std::unique_ptr<Scheduler> sched;
  std::unique_ptr<ThreadPool> pool;
  std::unordered_map<RequestId, std::unique_ptr<ActiveRequest>> requests;
  struct Owner {
    ActiveRequest* request;
    int choice;
  };
  std::unordered_map<SeqId, Owner> seq_owner;
  ForwardOutput forward_out;
  std::vector<engine_internal::PendingEvent> events;  // This iteration's, delivered last.
  std::vector<RequestId> retired;  // Every choice ended; erased by RetireFinished.
  EngineStats counters;            // Running totals and histograms; published as a snapshot.
  bool stalled = false;            // The last step scheduled nothing: wait for new input.

  // Shared with Submit/Cancel/Stats threads.
  std::mutex mu;
  std::condition_variable wake;
  std::deque<std::unique_ptr<ActiveRequest>> inbox;  // Guarded by mu.
  struct Cancellation {
    RequestId id;
    int choice;  // kAllChoices: the whole request (kCancelled); else that choice (kStop).
  };
  static constexpr int kAllChoices = -1;
  std::vector<Cancellation> cancels;                 // Guarded by mu.
  bool tier_ready = false;  // A prefetch completed (set by the tier I/O thread). Guarded by mu.
  std::vector<std::function<void()>> loop_tasks;     // Run between steps. Guarded by mu.
  bool started = false, stopping = false;            // Guarded by mu.
  std::thread thread;
  std::atomic<RequestId> next_id{1};
  std::atomic<int64_t> waiting_in_loop{0};  // Requests queued inside the loop (not running).
  // Seats (unfinished choices) of the loop's waiting requests and of its running ones; the
  // inbox's. Written under mu, so Submit's queue check sees them together.
  std::atomic<int64_t> waiting_seqs_in_loop{0}, running_seqs{0};
  int64_t inbox_seqs = 0;  // Guarded by mu.
  std::atomic<int64_t> rejected{0};
  mutable std::mutex stats_mu;
  EngineStats published;  // Guarded by stats_mu.

  // engine.cc
  Status Validate(const RequestParams& p) const;
  // engine_loop.cc
  void Loop();
  // Takes new requests and cancellations; false when stopping.
  bool WaitForWork();
  // Takes a new request: into the scheduler, or parked while its prefix is fetched from a tier.
  void Accept(std::unique_ptr<ActiveRequest> r, bool may_prefetch = true);
  // Starts a prefetch of the prompt's blocks that the pool and RAM miss; 0 if none is worth it.
  uint64_t MaybePrefetch(const ActiveRequest& r);
  void Enqueue(ActiveRequest* r);
  void LandPrefetches();
  void CancelRequest(RequestId id);
  void StopChoiceNow(RequestId id, int choice);
  void Step();
  void OnLogits(const ScheduledChunk& chunk, const float* logits);
  void Sample(ActiveRequest* r, int choice, const float* logits, double lse);
  void FinishChoice(ActiveRequest* r, int choice, FinishReason reason, const std::string& error);
  void FailChunks(const SchedulerOutput& plan, const Status& status);
  void RetireFinished();
  void Emit(const ActiveRequest& r, RequestEvent e);
  void Publish();
  void Deliver();
  // Ends every request (kCancelled), queued or active. Loop state must be exclusive to the caller.
  void CancelEverything();
};

}  // namespace kvengine
