// Sampler: picks the next token from one row of logits.
//
// The chain, in llama.cpp's default order (each step sees the survivors of the previous one):
//   1. repetition penalty on the distinct tokens among the last repetition_window recent ones;
//   2. greedy when temperature <= 0: the argmax, ties to the lowest id (no randomness used);
//   3. top-k;  4. top-p (probabilities at temperature 1, as llama.cpp computes them);
//   5. min-p;  6. temperature;  7. softmax and one draw.
// At least one token always survives (the most likely one). NaN logits count as -inf; when the
// largest logit is not finite (+inf, or every logit -inf), the result is the greedy choice.
//
// Reproducibility: the generator is std::mt19937_64 seeded with params.seed, whose output the
// C++ standard fixes bit for bit. Each non-greedy Sample() takes exactly one 64-bit draw and turns
// it into a uniform in [0, 1) itself (top 53 bits * 2^-53) instead of using
// std::uniform_real_distribution, whose algorithm is left to the library. So the same seed,
// parameters, logits and recent tokens give the same tokens on any platform.
//
// Ownership and threads: a Sampler holds one sequence's generator state and scratch buffers; one
// thread at a time. Sample() does not allocate once its buffers have grown to the vocabulary.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "runtime/sampling_params.h"

namespace kvengine {

class Sampler {
 public:
  // `params` should pass Validate(); out-of-range values still behave as documented in
  // SamplingParams (off, or greedy) rather than failing.
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

  // The chosen token id in [0, logits.size()). `logits` must not be empty. `recent_tokens` are
  // the sequence's tokens so far, oldest first (ids outside the vocabulary are ignored).
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> recent_tokens);

  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };

  void ApplyRepetitionPenalty(std::span<const int32_t> recent_tokens);
  // Sorts candidates_ by logit descending, ties by id ascending (once; later steps keep order).
  void SortCandidates();
  void ApplyTopK();
  void ApplyTopP();
  void ApplyMinP();
  // The first candidate with the largest logit (lowest id when candidates_ is in id order).
  int32_t Argmax() const;
  // Softmax over candidates_ and one draw from rng_.
  int32_t Draw();

  SamplingParams params_;
  std::mt19937_64 rng_;
  // The surviving tokens. Before SortCandidates: all ids in id order, candidates_[i].id == i.
  std::vector<Candidate> candidates_;
  bool sorted_ = false;
  std::vector<int32_t> penalized_;  // Scratch: distinct ids in the repetition window.
};

}  // namespace kvengine
