// The scheduler's options (Scheduler, scheduler.h), on their own so that the engine's public
// options (include/kvengine/engine_options.h) can embed them without the scheduler.
#pragma once

#include <cstdint>

#include "kvengine/status.h"

namespace kvengine {

enum class StepPolicy {
  kMixed,         // Decodes and prefill chunks in every step (vLLM's chunked prefill).
  kPrefillFirst,  // Prompt work alone when there is any, decodes in steps without it.
};

inline constexpr StepPolicy kStepPolicies[] = {StepPolicy::kMixed, StepPolicy::kPrefillFirst};

const char* StepPolicyName(StepPolicy policy);  // "mixed", "prefill-first" (the CLI's names).

// What happens to a preempted sequence's KV. The seam for swapping to a host tier:
// add a mode here and its case in Scheduler::Preempt (scheduler_step.cc) and Admit; the compiler
// lists every switch that must decide.
enum class PreemptionMode {
  // Release the blocks; on re-admission the sequence runs prompt + sampled tokens again. Its
  // full blocks stay in the prefix cache until evicted, so usually only the tail is recomputed.
  kRecompute,
};

const char* PreemptionModeName(PreemptionMode mode);  // "recompute".

struct SchedulerOptions {
  int max_num_seqs = 64;                  // Seats: sequences running at once (n choices take n).
  int64_t max_num_batched_tokens = 2048;  // Tokens computed per step (decodes + prefill chunks);
                                          // >= max_num_seqs so every running decode fits.
  bool contiguous_reservation = false;    // Admission reserves max_model_len tokens per seat.
  // Fraction of each group's blocks an admission must leave available (free or evictable) while
  // other sequences run. Without it admission takes every block a finished sequence frees and
  // the next decode step preempts at once. In [0, 1).
  double admission_watermark = 0.01;
  PreemptionMode preemption_mode = PreemptionMode::kRecompute;
  StepPolicy step_policy = StepPolicy::kMixed;

  Status Validate() const;
};

}  // namespace kvengine
