// Scheduler: decides what each engine step computes — continuous batching with chunked prefill,
// prefix-cache-aware admission and preemption — against the KvCacheManager, without a model.
//
// Owner: the engine loop thread, which also owns the KvCacheManager it is given. Not
// thread-safe. Time comes from the injected Clock (arrival stamps), so tests drive it with a
// ManualClock and a metadata-only KvCacheManager.
//
// A step is Schedule() -> the model runs every chunk -> Complete() -> the caller samples a token
// for each chunk with `samples` set and calls AppendToken (or Remove when the sequence is done,
// or Fork first for n > 1 choices). Every sequence is "tokens[0, num_computed) hold KV, the rest
// must run": a prefill, a recompute after preemption and a decode are the same thing, a chunk of
// the tokens not computed yet (a decode is a chunk of one).
//
// Policy of Schedule(), in order:
//   1. Running sequences in service order (ServedBefore: priority, then arrival). Each gets its
//      remaining tokens, capped by the step's token budget (max_num_batched_tokens). Budget is
//      held back for the decodes further down the list, so a long prefill is chunked instead of
//      stalling them. Each chunk is planned against the KV manager (PlanStep) before it is
//      committed (Append): a prefill chunk shrinks to what fits; when not even one token fits,
//      the last sequence in service order (lowest priority, then latest arrival) is preempted —
//      possibly the sequence itself — and the plan is retried.
//   2. Only if nothing was preempted this step: waiting sequences in service order (FCFS within
//      a priority; preempted sequences keep their arrival, so they go first) are admitted while
//      the budget, max_num_seqs seats and blocks allow. A fresh sequence adopts its longest
//      cached prefix (those tokens are not computed again) and its first chunk must fit whole
//      (it shrinks only when nothing else runs) and leave admission_watermark of every group's
//      blocks available for the running sequences to grow into (vLLM's watermark; waived when
//      nothing runs). The first that does not fit stops admission (strict FCFS: no overtaking).
//   3. Contiguous reservation (`contiguous_reservation`, emulating max-length pre-allocation):
//      admission also needs max_model_len tokens' worth of blocks per seat left over after the
//      reservations of every running seat, and no watermark (the reservation already leaves
//      every seat room to grow); nothing else changes.
//   4. StepPolicy::kPrefillFirst (not the default): a step first tries prompt work alone —
//      steps 1 and 2 with the decodes left out (running prefill chunks, then admissions). If that
//      schedules anything, the step is that; only otherwise do the decodes run (step 1 as above;
//      admission, just tried with the whole budget, is not tried again). A new prompt's first
//      token then waits for no decode rows (on a compute-bound CPU each costs as much as a
//      prompt token), while the running sequences wait one step longer for each prefill step:
//      SGLang's default (mixed chunks off) and vLLM V0's without chunked prefill. Decodes can
//      starve while prompts keep arriving.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "kvengine/status.h"
#include "kv/kv_cache_manager.h"
#include "sched/sched_sequence.h"
#include "sched/scheduler_options.h"

namespace kvengine {

struct NewSequence {
  SeqId id = 0;
  std::vector<int32_t> prompt;  // At least one token.
  int priority = 0;             // Higher is served first and preempted last.
  std::string cache_salt;       // Prefix-cache namespace (per tenant).
  int seats = 1;                // Seats it will grow to (n choices of one request).
};

// Positions [start_pos, start_pos + num_tokens) of one sequence run in this step. Their KV slots
// are appended already; `samples`: the chunk ends at the sequence's last token, so its logits
// choose the next token.
struct ScheduledChunk {
  SeqId seq = 0;
  int64_t start_pos = 0;
  int64_t num_tokens = 0;
  bool samples = false;
  bool admitted = false;  // The sequence was (re-)admitted this step; start_pos = cached tokens.
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // Service order.
  std::vector<SeqId> preempted;        // Moved back to waiting this step, KV released.
  int64_t num_tokens = 0;              // Sum of chunk sizes, <= max_num_batched_tokens.
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  // `kv` and `clock` must outlive the scheduler. Options must pass Validate().
  Scheduler(KvCacheManager* kv, SchedulerOptions options, const Clock* clock);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a sequence (waiting). InvalidArgument for a duplicate id, an empty prompt or
  // seats outside 1..max_num_seqs.
  Status Add(NewSequence seq);
  // Plans and commits one step (see the policy above).
  SchedulerOutput Schedule();
  // After the model ran `out`'s chunks: their positions hold KV.
  void Complete(const SchedulerOutput& out);
  // A token sampled from a `samples` chunk's logits; it runs in a later step.
  void AppendToken(SeqId seq, int32_t token);
  // `child` (new, running) shares all of `parent`'s KV (copy-on-write after) and takes one of
  // its seats, or a free one. `parent` must be running with every token computed.
  Status Fork(SeqId parent, SeqId child);
  // Drops a sequence in any state and releases its KV; false if unknown.
  bool Remove(SeqId seq);

  const SchedSequence* Find(SeqId seq) const;
  std::span<const int32_t> Tokens(SeqId seq) const;
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int seats_running() const { return seats_running_; }
  int64_t num_preemptions() const { return num_preemptions_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  // Ids in service order.
  std::vector<SeqId> RunningIds() const;
  std::vector<SeqId> WaitingIds() const;
  const SchedulerOptions& options() const { return options_; }
  // Blocks a seat reserves in group g under contiguous reservation (max_model_len tokens).
  int64_t reserved_blocks_per_seat(int g) const { return reserve_blocks_[size_t(g)]; }

 private:
  using SeqList = std::vector<SchedSequence*>;  // Sorted by ServedBefore.

  static void Insert(SeqList* list, SchedSequence* s);
  static void Erase(SeqList* list, const SchedSequence* s);
  // Whether computing tokens [from, from + n) of `s` fits the pool now (a dry run). `admitted`:
  // `s` is fresh in the KV manager and `from` is its cached prefix.
  bool Fits(const SchedSequence& s, bool admitted, int64_t from, int64_t n) const;
  // Fits, for a fresh sequence, leaving watermark_blocks_ available in every group.
  bool FitsAboveWatermark(const SchedSequence& s, int64_t from, int64_t n) const;
  // The most tokens in 1..want from position `from` that fit; 0 if none.
  int64_t LargestFit(const SchedSequence& s, bool admitted, int64_t from, int64_t want) const;
  // Appends tokens [from, from + n) of `s` and records the chunk (the plan said it fits).
  void Commit(SchedSequence* s, int64_t from, int64_t n, bool admitted, SchedulerOutput* out);
  void Preempt(SchedSequence* victim, SchedulerOutput* out);
  // `decodes`: false leaves the running sequences that only decode out of this step.
  void ScheduleRunning(int64_t* budget, SchedulerOutput* out, bool decodes);
  void Admit(int64_t* budget, SchedulerOutput* out);
  bool ReservationFits(const SchedSequence& s) const;
  SchedSequence& Get(SeqId seq);

  KvCacheManager* kv_;
  SchedulerOptions options_;
  const Clock* clock_;
  std::unordered_map<SeqId, std::unique_ptr<SchedSequence>> seqs_;
  SeqList running_;
  SeqList waiting_;
  int seats_running_ = 0;  // Sum of seats over running_.
  int64_t num_preemptions_ = 0;
  uint64_t next_arrival_seq_ = 0;
  std::vector<int64_t> reserve_blocks_;  // [group] BlocksPerSequence at max_model_len.
  std::vector<int64_t> watermark_blocks_;  // [group] ceil(admission_watermark x pool blocks).
};

}  // namespace kvengine
