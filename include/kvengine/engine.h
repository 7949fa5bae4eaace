// Engine: continuous batching of many requests over one model and one KV cache.
//
// Threads: one engine-loop thread owns the scheduler (sched/scheduler.h), the KvCacheManager and
// the model's scratch; it is started by Start() and stopped by Stop() (or the destructor).
// Submit, Cancel, Stats and DescribeCapacity may be called from any thread (HTTP threads): they
// talk to the loop through a mutex-protected queue and a published stats snapshot, never
// touching the KV manager directly. The Engine object itself is owned by whoever created it
// (the server or a tool) and must outlive every call.
//
// Each step the loop (1) applies cancellations and admissions, (2) asks the scheduler for a
// plan — decodes of running sequences plus chunks of pending prefills under
// max_num_batched_tokens and max_num_seqs, planned against the KV manager before anything is
// committed, preempting (lowest priority, then latest arrival; recompute later) when blocks run
// out — (3) runs one batched Model::Forward for every scheduled token, (4) samples and emits
// events. A cancelled request's blocks are freed within one step, whatever its state.
//
// Events of a step are delivered after the step's stats are published, so a caller that saw a
// request's final event and then reads Stats() sees that request's blocks released.
#pragma once

#include <memory>
#include <string>

#include "kvengine/engine_options.h"
#include "kvengine/engine_stats.h"
#include "kvengine/request.h"
#include "kvengine/status.h"
#include "model/model.h"

namespace kvengine {

// Where Engine::Offload moves the pool's cached blocks (tier benchmarks, tests).
enum class OffloadTo {
  kRam,        // Demoted into the RAM tier (as evictions would).
  kDisk,       // Demoted, then RAM spilled to disk and emptied: only disk (and Redis) hold them.
  kBelowDisk,  // Demoted, then RAM emptied without spilling: only what Redis holds remains.
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Create(std::shared_ptr<const Model> model,
                                                EngineOptions options);
  ~Engine();

  void Start();  // Starts the loop thread; a no-op when started or stopped.
  // Finishes no more work: joins the loop; every pending request ends with kCancelled; later
  // Submits are kUnavailable. Idempotent; the destructor calls it.
  void Stop();

  // Queues a request. Errors, decided up front and never after queueing: kInvalidArgument for
  // bad parameters (empty prompt, token ids outside the vocabulary, n outside
  // 1..min(kMaxChoices, max_num_seqs), max_tokens < 1, logprobs outside 0..kMaxLogprobs,
  // sampling); kOutOfRange for a prompt + max_tokens beyond max_model_len, or when the request
  // can never fit in the KV pool (the message says how much KV it needs, how much exists, and
  // what would make it fit: int8 KV, a smaller context, more memory); kUnavailable when the
  // queue is full or the engine is stopped.
  Result<RequestId> Submit(RequestParams params, EventCallback on_event);
  // Frees the request's blocks within one step in every state; idempotent; unknown ids ignored.
  void Cancel(RequestId id);
  // Ends one choice of a running request with kStop (the caller found a stop string in its
  // text): its sequence and blocks go within one step, the other choices go on. Idempotent;
  // unknown ids, choices out of range or finished, and choices without a token are ignored.
  void StopChoice(RequestId id, int choice);

  EngineStats Stats() const;
  // Empties the pool's prefix cache into the tiers (see OffloadTo) and waits for the tier
  // writes; runs on the engine thread between steps. Unavailable without tiers or when the
  // engine is not running.
  Status Offload(OffloadTo target);
  // One line for the server log: pool size, bytes per token, the max concurrency it implies:
  // "KV pool 512 blocks x 16 tokens = 1.00 GiB (f16), 131072 bytes/token, max 2 concurrent
  // sequences at max_model_len 4096".
  std::string DescribeCapacity() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvengine
