// What one scheduler step may mix (Scheduler's policy 4, scheduler.h), on its own so that the
// engine's options can name it without the scheduler.
#pragma once

namespace kvengine {

enum class StepPolicy {
  kMixed,         // Decodes and prefill chunks in every step (vLLM's chunked prefill).
  kPrefillFirst,  // Prompt work alone when there is any, decodes in steps without it.
};

inline constexpr StepPolicy kStepPolicies[] = {StepPolicy::kMixed, StepPolicy::kPrefillFirst};

const char* StepPolicyName(StepPolicy policy);  // "mixed", "prefill-first" (the CLI's names).

}  // namespace kvengine
