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

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/histogram.h"
#include "kvengine/status.h"
#include "kv/kv_cache_manager.h"
#include "sched/step_policy.h"
#include "model/model.h"
#include "runtime/sampler.h"
#include "tier/tier_config.h"
#include "tier/tier_manager.h"

namespace kvengine {

using RequestId = uint64_t;

// Most choices (n) of one request.
inline constexpr int kMaxChoices = 128;
// Most top logprobs per token (OpenAI's limit).
inline constexpr int kMaxLogprobs = 20;

struct EngineOptions {
  int max_num_seqs = 64;                  // Sequences decoding at once (n choices count n).
  int64_t max_num_batched_tokens = 2048;  // Tokens per forward pass (decodes + prefill chunks);
                                          // >= max_num_seqs.
  int max_queued_requests = 256;          // Waiting requests beyond this are refused (503).
  int threads = 0;                        // Compute threads; 0 = all cores.
  // Groups, block size, memory, max_model_len, prefix caching. Empty groups: the model's
  // groups with f16 KV (BuildKvGroups); an empty model_fingerprint: the model's name.
  KvCacheConfig kv;
  // Emulates pre-PagedAttention systems: admission reserves max_model_len tokens of blocks per
  // sequence up front (for side-by-side comparisons; `--kv-policy contiguous`).
  bool contiguous_reservation = false;
  // Fraction of the pool an admission leaves available for running sequences to grow into
  // (SchedulerOptions::admission_watermark).
  double admission_watermark = 0.01;
  // Whether a step mixes decodes with prompt work (SchedulerOptions::step_policy).
  StepPolicy step_policy = StepPolicy::kMixed;
  // The model's end-of-generation tokens (the tokenizer's EOS, e.g. Tokenizer::eos()); a
  // request stops at them unless it sets ignore_eos.
  std::vector<int32_t> eos_token_ids;
  // Time for latencies and arrival order; null: SteadyClock. Read from Submit threads and the
  // loop, so it must be thread-safe.
  const Clock* clock = nullptr;
  // Offload tiers below the pool (host RAM, disk, Redis); all off by default (docs/tiers.md).
  TierConfig tiers;
};

struct RequestParams {
  std::vector<int32_t> prompt;  // Token ids, BOS included as the caller decided.
  int64_t max_tokens = 16;      // New tokens per choice.
  int n = 1;                    // Choices sharing the prompt's blocks (copy-on-write after).
  SamplingParams sampling;      // Choice i uses seed + i.
  int logprobs = 0;             // 1..kMaxLogprobs: also the top-K logprobs of each position.
  std::vector<int32_t> stop_token_ids;  // Besides the model's end-of-generation tokens.
  bool ignore_eos = false;
  std::string cache_salt;
  int priority = 0;  // Higher is served first and preempted later.
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason r);  // "none", "stop", "length", "cancelled", "error".

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// One event per sampled token (finish_reason kNone), and one final event per choice (no token).
// The token that stopped a choice (EOS or a stop token) has its own token event, as Generate
// returns it; control tokens decode to no text.
struct RequestEvent {
  RequestId id = 0;
  int choice = 0;
  bool has_token = false;
  int32_t token = 0;
  float logprob = 0;  // Log-softmax of the model's logits (before sampling filters).
  std::vector<TokenLogprob> top_logprobs;  // RequestParams::logprobs entries, most likely first.
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;  // kError only.
  // Set on the final event of a choice:
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // Served by the prefix cache.
  int64_t completion_tokens = 0;
};

// Called on the engine thread (the final kCancelled events of Stop(): on the thread calling
// Stop()), with no engine lock held. It must not block (push into the caller's own queue); it
// may call Submit, Cancel and Stats (they only queue or copy), never Stop.
using EventCallback = std::function<void(const RequestEvent&)>;

struct EngineStats {
  // Requests with a sequence running; requests queued or preempted with none running.
  int64_t requests_running = 0, requests_waiting = 0, preemptions_total = 0;
  // Prompt tokens of admitted requests; of which computed by the model the first time (tokens
  // the prefix cache served are not); generated tokens.
  int64_t prompt_tokens_total = 0, prompt_tokens_computed_total = 0, generation_tokens_total = 0;
  int64_t recomputed_tokens_total = 0;  // Positions run again after a preemption.
  // Prompt tokens looked up in / served by the prefix cache (every admission, re-admissions too).
  int64_t prefix_cache_queries_tokens = 0, prefix_cache_hits_tokens = 0;
  int64_t requests_finished_total = 0;   // Every choice ended by stop or length.
  int64_t requests_cancelled_total = 0;  // Cancel() or Stop().
  int64_t requests_rejected_total = 0;   // Submit errors.
  int64_t steps_total = 0;               // Forward passes.
  KvStats kv;
  double kv_usage = 0;  // Used blocks / capacity, 0..1.
  // Since start, seconds: time to first token, inter-token latency, end-to-end latency.
  Histogram ttft{Histogram::LatencyBounds()};
  Histogram itl{Histogram::LatencyBounds()};
  Histogram e2e{Histogram::LatencyBounds()};
  bool has_tiers = false;
  TierStats tiers;               // Meaningful when has_tiers.
  int64_t tier_swap_ins_total = 0;  // Preempted sequences resumed with KV from a tier.
};

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
