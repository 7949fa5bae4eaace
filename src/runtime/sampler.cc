#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace kvengine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Higher logit first; equal logits by lower id, so every ordering is deterministic.
bool Before(const auto& a, const auto& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

// A uniform double in [0, 1) from the top 53 bits of one 64-bit draw.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> recent_tokens) {
  KV_CHECK(!logits.empty()) << "Sample needs at least one logit";
  KV_CHECK(logits.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  const auto n = static_cast<int32_t>(logits.size());
  candidates_.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    candidates_[i] = {i, std::isnan(logits[i]) ? kNegInf : logits[i]};
  }
  sorted_ = false;

  ApplyRepetitionPenalty(recent_tokens);
  // Greedy, or degenerate logits for which probabilities are undefined.
  const int32_t best = Argmax();
  if (!(params_.temperature > 0.0f) || !std::isfinite(candidates_[best].logit)) return best;

  ApplyTopK();
  ApplyTopP();
  ApplyMinP();
  if (params_.temperature != 1.0f) {
    for (Candidate& c : candidates_) c.logit /= params_.temperature;
  }
  return Draw();
}

void Sampler::ApplyRepetitionPenalty(std::span<const int32_t> recent_tokens) {
  const float penalty = params_.repetition_penalty;
  if (!(penalty > 0.0f) || penalty == 1.0f || params_.repetition_window <= 0) return;
  const size_t window =
      std::min(recent_tokens.size(), static_cast<size_t>(params_.repetition_window));
  penalized_.clear();
  for (int32_t id : recent_tokens.subspan(recent_tokens.size() - window)) {
    if (id >= 0 && id < static_cast<int32_t>(candidates_.size())) penalized_.push_back(id);
  }
  std::sort(penalized_.begin(), penalized_.end());
  penalized_.erase(std::unique(penalized_.begin(), penalized_.end()), penalized_.end());
  // candidates_ is still in id order here.
  for (int32_t id : penalized_) {
    float& logit = candidates_[id].logit;
    logit = logit > 0.0f ? logit / penalty : logit * penalty;
  }
}

void Sampler::SortCandidates() {
  if (sorted_) return;
  std::sort(candidates_.begin(), candidates_.end(), Before<Candidate, Candidate>);
  sorted_ = true;
}

void Sampler::ApplyTopK() {
  const int k = params_.top_k;
  if (k <= 0 || static_cast<size_t>(k) >= candidates_.size()) return;
  std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(),
                    Before<Candidate, Candidate>);
  candidates_.resize(k);
  sorted_ = true;
}

void Sampler::ApplyTopP() {
  const float p = params_.top_p;
  if (!(p < 1.0f) || candidates_.size() == 1) return;
  SortCandidates();
  // Softmax at temperature 1 over the survivors; the front holds the finite maximum.
  const double max_logit = candidates_.front().logit;
  double sum = 0.0;
  for (const Candidate& c : candidates_) sum += std::exp(c.logit - max_logit);
  double cumulative = 0.0;
  size_t keep = candidates_.size();
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += std::exp(candidates_[i].logit - max_logit) / sum;
    if (cumulative >= p) {
      keep = i + 1;  // The smallest prefix reaching p; at least one token.
      break;
    }
  }
  candidates_.resize(keep);
}

void Sampler::ApplyMinP() {
  const float min_p = std::min(params_.min_p, 1.0f);
  if (!(min_p > 0.0f) || candidates_.size() == 1) return;
  float max_logit = kNegInf;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  // p_i >= min_p * p_max  <=>  logit_i >= max_logit + log(min_p); the maximum always stays.
  const float threshold = max_logit + std::log(min_p);
  std::erase_if(candidates_,
                [&](const Candidate& c) { return c.logit < threshold && c.logit != max_logit; });
}

int32_t Sampler::Argmax() const {
  size_t best = 0;
  for (size_t i = 1; i < candidates_.size(); ++i) {
    if (Before(candidates_[i], candidates_[best])) best = i;
  }
  return candidates_[best].id;
}

int32_t Sampler::Draw() {
  const double u = Uniform01(rng_);  // Exactly one draw per call (see the header).
  float max_logit = kNegInf;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  // Temperature scaling may overflow a huge logit to +inf: no distribution, take the maximum.
  if (!std::isfinite(max_logit)) return Argmax();
  double sum = 0.0;
  for (const Candidate& c : candidates_) sum += std::exp(static_cast<double>(c.logit) - max_logit);
  const double target = u * sum;  // sum >= 1: the maximum contributes exp(0).
  double cumulative = 0.0;
  int32_t last_possible = candidates_.front().id;
  for (const Candidate& c : candidates_) {
    const double w = std::exp(static_cast<double>(c.logit) - max_logit);
    if (w <= 0.0) continue;
    cumulative += w;
    last_possible = c.id;
    if (target < cumulative) return c.id;
  }
  return last_possible;  // Rounding left target >= the final sum.
}

}  // namespace kvengine
