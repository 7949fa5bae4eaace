// SamplingParams: how the next token is chosen from the model's logits, with the validation the
// CLI and the HTTP server apply to user input before building a Sampler.
#pragma once

#include <cstdint>

#include "kvengine/status.h"

namespace kvengine {

inline constexpr float kMaxTemperature = 2.0f;
inline constexpr int kMaxRepetitionWindow = 1 << 20;

struct SamplingParams {
  // Logits are divided by it after the filters; <= 0 means greedy (argmax, ties -> lowest id).
  // Valid: [0, kMaxTemperature].
  float temperature = 0.8f;
  // Keep only the k highest logits; <= 0 (or >= the vocabulary) means off. Valid: >= -1 (-1 and
  // 0 both mean off, as OpenAI-style servers accept either).
  int top_k = 40;
  // Keep the smallest set of most likely tokens whose probability (at temperature 1) adds up to
  // at least top_p; >= 1 means off. Valid: (0, 1].
  float top_p = 0.95f;
  // Drop tokens whose probability is below min_p times the most likely one's; <= 0 means off.
  // Valid: [0, 1].
  float min_p = 0.05f;
  // Each distinct token among the last repetition_window recent tokens has its logit divided by
  // the penalty when positive and multiplied by it otherwise; 1 means off. Valid: > 0, finite.
  float repetition_penalty = 1.0f;
  // How many of the most recent tokens the penalty looks at; 0 means off.
  // Valid: [0, kMaxRepetitionWindow].
  int repetition_window = 64;
  // Seeds the sampler's std::mt19937_64. The same seed, parameters and inputs give the same
  // tokens on every platform and standard library (see sampler.h).
  uint64_t seed = 0;

  // InvalidArgument naming the first field that is out of range (NaN included).
  Status Validate() const;
};

}  // namespace kvengine
