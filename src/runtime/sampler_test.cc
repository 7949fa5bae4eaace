// Sampler: parameter validation, greedy, reproducibility, each filter's exclusions (empirical),
// the repetition penalty, and the sampled distribution against softmax.
#include "runtime/sampler.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvengine {
namespace {

using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// All filters off, temperature 1: a plain softmax draw.
SamplingParams PlainParams(uint64_t seed = 7) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<float> RandomLogits(std::mt19937& rng, int n) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(n);
  for (float& l : logits) l = normal(rng);
  return logits;
}

// Logits whose softmax is exactly `probs`.
std::vector<float> LogitsFor(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// How often each id is drawn in `draws` samples.
std::map<int32_t, int> Histogram(Sampler& sampler, const std::vector<float>& logits, int draws) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < draws; ++i) ++counts[sampler.Sample(logits, {})];
  return counts;
}

// Draws from probabilities 0.5, 0.3, 0.15, 0.05 (ids 1, 3, 0, 2) under `p`: how often each id
// comes in 5000 samples.
std::map<int32_t, int> HistogramOfFour(const SamplingParams& p) {
  Sampler sampler(p);
  return Histogram(sampler, LogitsFor({0.15, 0.5, 0.05, 0.3}), 5000);
}

std::string ErrorOf(const SamplingParams& p) { return p.Validate().message(); }

TEST(SamplingParamsTest, DefaultsAreValid) { EXPECT_TRUE(SamplingParams().Validate().ok()); }

TEST(SamplingParamsTest, RejectsOutOfRangeValuesNamingTheField) {
  auto with = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return ErrorOf(p);
  };
  EXPECT_THAT(with([](SamplingParams& p) { p.temperature = -0.1f; }), HasSubstr("temperature"));
  EXPECT_THAT(with([](SamplingParams& p) { p.temperature = 2.5f; }), HasSubstr("temperature"));
  EXPECT_THAT(with([](SamplingParams& p) { p.temperature = kNaN; }), HasSubstr("temperature"));
  EXPECT_THAT(with([](SamplingParams& p) { p.top_k = -2; }), HasSubstr("top_k"));
  EXPECT_THAT(with([](SamplingParams& p) { p.top_p = 0.0f; }), HasSubstr("top_p"));
  EXPECT_THAT(with([](SamplingParams& p) { p.top_p = 1.01f; }), HasSubstr("top_p"));
  EXPECT_THAT(with([](SamplingParams& p) { p.top_p = kNaN; }), HasSubstr("top_p"));
  EXPECT_THAT(with([](SamplingParams& p) { p.min_p = -0.01f; }), HasSubstr("min_p"));
  EXPECT_THAT(with([](SamplingParams& p) { p.min_p = 1.5f; }), HasSubstr("min_p"));
  EXPECT_THAT(with([](SamplingParams& p) { p.repetition_penalty = 0.0f; }),
              HasSubstr("repetition_penalty"));
  EXPECT_THAT(with([](SamplingParams& p) { p.repetition_penalty = kInf; }),
              HasSubstr("repetition_penalty"));
  EXPECT_THAT(with([](SamplingParams& p) { p.repetition_window = -1; }),
              HasSubstr("repetition_window"));
  // Boundaries that are allowed.
  EXPECT_EQ(with([](SamplingParams& p) {
              p.temperature = 0.0f;
              p.top_k = -1;
              p.top_p = 1.0f;
              p.min_p = 1.0f;
              p.repetition_window = 0;
            }),
            "");
}

TEST(SamplerTest, GreedyIsArgmaxWithTiesToLowestId) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler sampler(p);
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits = RandomLogits(rng, 100);
    const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.Sample(logits, {}), argmax);
  }
  EXPECT_EQ(sampler.Sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}, {}), 1);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::mt19937 rng(2);
  const std::vector<float> logits = RandomLogits(rng, 64);
  SamplingParams p = PlainParams(/*seed=*/42);
  p.temperature = 1.5f;
  Sampler a(p), b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> seq_a, seq_b, seq_c;
  for (int i = 0; i < 200; ++i) {
    seq_a.push_back(a.Sample(logits, {}));
    seq_b.push_back(b.Sample(logits, {}));
    seq_c.push_back(c.Sample(logits, {}));
  }
  EXPECT_EQ(seq_a, seq_b);
  EXPECT_NE(seq_a, seq_c);
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  std::mt19937 rng(3);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SamplingParams p = PlainParams(seed);
    p.top_k = 1;
    Sampler sampler(p);
    std::vector<float> logits = RandomLogits(rng, 50);
    const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.Sample(logits, {}), argmax);
  }
}

TEST(SamplerTest, TopKKeepsOnlyTheKHighest) {
  SamplingParams p = PlainParams();
  p.top_k = 2;
  Sampler sampler(p);
  const std::map<int32_t, int> counts =
      Histogram(sampler, std::vector<float>{0.0f, 1.0f, 0.9f, 0.8f, -1.0f}, 3000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts.at(1), 0);
  EXPECT_GT(counts.at(2), 0);
}

TEST(SamplerTest, TopPNeverSamplesExcludedTokens) {
  // Sorted probabilities 0.5, 0.3, 0.15, 0.05 (ids shuffled): top_p 0.7 keeps {0.5, 0.3}.
  SamplingParams p = PlainParams();
  p.top_p = 0.7f;
  const std::map<int32_t, int> counts = HistogramOfFour(p);
  EXPECT_EQ(counts.count(0), 0u);
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_GT(counts.at(1), 0);
  EXPECT_GT(counts.at(3), 0);
  // Renormalized over the two survivors: 0.5 / 0.8 = 0.625.
  EXPECT_NEAR(counts.at(1) / 5000.0, 0.625, 0.03);
}

TEST(SamplerTest, MinPNeverSamplesExcludedTokens) {
  // min_p 0.2 of the top probability 0.5 = 0.1: drops the 0.05 token only.
  SamplingParams p = PlainParams();
  p.min_p = 0.2f;
  const std::map<int32_t, int> counts = HistogramOfFour(p);
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_EQ(counts.size(), 3u);
}

TEST(SamplerTest, RepetitionPenaltyChangesTheChoice) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  p.repetition_window = 4;
  Sampler sampler(p);
  // Positive logit: 2.0 / 1.5 = 1.33 < 1.9.
  EXPECT_EQ(sampler.Sample(std::vector<float>{2.0f, 1.9f, 0.0f}, std::vector<int32_t>{0}), 1);
  // Negative logit: -1.0 * 1.5 = -1.5 < -1.2.
  EXPECT_EQ(sampler.Sample(std::vector<float>{-1.0f, -1.2f}, std::vector<int32_t>{0, 0, 0}), 1);
  // Outside the window of the last 4 tokens, or outside the vocabulary: no effect.
  EXPECT_EQ(
      sampler.Sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{0, 1, 1, 1, 1, -3, 99}),
      0);
  // Penalty 1 is off.
  p.repetition_penalty = 1.0f;
  Sampler off(p);
  EXPECT_EQ(off.Sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{0}), 0);
}

// Chi-square statistic of `counts` against the softmax of logits / temperature.
double ChiSquare(const std::map<int32_t, int>& counts, const std::vector<float>& logits,
                 float temperature, int draws) {
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l / temperature);
  double chi2 = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double expected = draws * std::exp(logits[i] / temperature) / sum;
    const auto it = counts.find(static_cast<int32_t>(i));
    const double observed = it == counts.end() ? 0.0 : it->second;
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  return chi2;
}

TEST(SamplerTest, DistributionMatchesSoftmax) {
  // 6 tokens, 5 degrees of freedom: P(chi2 > 25) ~ 1.4e-4 for a correct sampler; the seeds
  // are fixed, so the test is deterministic.
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -1.0f};
  constexpr int kDraws = 20000;
  constexpr double kChi2Limit = 25.0;
  for (float temperature : {1.0f, 0.5f, 1.7f}) {
    SCOPED_TRACE(temperature);
    SamplingParams p = PlainParams(/*seed=*/11);
    p.temperature = temperature;
    Sampler sampler(p);
    EXPECT_LT(ChiSquare(Histogram(sampler, logits, kDraws), logits, temperature, kDraws),
              kChi2Limit);
  }
}

TEST(SamplerTest, DegenerateLogits) {
  Sampler sampler(PlainParams());
  EXPECT_EQ(sampler.Sample(std::vector<float>{-kInf, -kInf, -kInf}, {}), 0);
  EXPECT_EQ(sampler.Sample(std::vector<float>{0.0f, kInf, 1.0f}, {}), 1);
  EXPECT_EQ(sampler.Sample(std::vector<float>{kNaN, -kInf, 0.0f}, {}), 2);
  for (int i = 0; i < 100; ++i) {
    EXPECT_NE(sampler.Sample(std::vector<float>{kNaN, 0.0f, 0.0f}, {}), 0);
  }
  EXPECT_EQ(sampler.Sample(std::vector<float>{3.0f}, {}), 0);
}

TEST(SamplerTest, DefaultChainSamplesOnlyPlausibleTokens) {
  // The default parameters (top-k 40, top-p 0.95, min-p 0.05, temperature 0.8) on a large
  // vocabulary: every draw is within the 40 highest logits.
  std::mt19937 rng(5);
  const std::vector<float> logits = RandomLogits(rng, 1000);
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  Sampler sampler{SamplingParams()};
  for (int i = 0; i < 500; ++i) {
    EXPECT_GE(logits[sampler.Sample(logits, {})], sorted[39]);
  }
}

}  // namespace
}  // namespace kvengine
