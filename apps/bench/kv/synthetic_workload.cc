#include "bench/kv/synthetic_workload.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>

namespace kvengine {

namespace {

// Spread of each lognormal length distribution (sigma of the underlying normal).
constexpr double kShareGptPromptSigma = 1.0;
constexpr double kShareGptOutputSigma = 0.8;
constexpr double kUserMessageSigma = 0.8;

// SplitMix64: derives independent engine seeds from (seed, workload) so that the three workloads
// of one run do not replay the same random stream.
uint64_t MixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Draws built only on mt19937_64's specified output, so results do not depend on the standard
// library's distribution implementations.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; the second value of each pair is dropped for simplicity).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite.
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  // Uniform in [0, n). The modulo bias is below n / 2^64: negligible for a vocabulary.
  int32_t Below(int32_t n) { return static_cast<int32_t>(engine_() % static_cast<uint64_t>(n)); }

  // A length with lognormal distribution of mean `mean` (so mu = ln(mean) - sigma^2 / 2),
  // rounded and clipped to [lo, hi] (lo <= hi).
  int64_t Length(double mean, double sigma, int64_t lo, int64_t hi) {
    const double mu = std::log(mean) - 0.5 * sigma * sigma;
    const double x = std::exp(mu + sigma * Normal());
    const double clipped = std::clamp(x, static_cast<double>(lo), static_cast<double>(hi));
    return std::clamp<int64_t>(std::llround(clipped), lo, hi);
  }

  void AppendTokens(int64_t n, int32_t vocab, std::vector<int32_t>* out) {
    out->reserve(out->size() + static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out->push_back(Below(vocab));
  }

 private:
  std::mt19937_64 engine_;
};

void GenerateShareGpt(const WorkloadSpec& spec, Rng* rng, Workload* w) {
  for (int64_t i = 0; i < spec.num_requests; ++i) {
    SimRequest r;
    r.session = static_cast<int32_t>(i);
    const int64_t p =
        rng->Length(kShareGptPromptMean, kShareGptPromptSigma, 1, spec.max_model_len - 1);
    const int64_t o =
        rng->Length(kShareGptOutputMean, kShareGptOutputSigma, 1, spec.max_model_len - p);
    rng->AppendTokens(p, spec.vocab_size, &r.prompt);
    rng->AppendTokens(o, spec.vocab_size, &r.output);
    w->requests.push_back(std::move(r));
  }
}

void GenerateSharedPrefix(const WorkloadSpec& spec, Rng* rng, Workload* w) {
  // One system prompt, byte-identical at the start of every request.
  std::vector<int32_t> system;
  rng->AppendTokens(spec.system_prompt_tokens, spec.vocab_size, &system);
  const int64_t room = spec.max_model_len - spec.system_prompt_tokens;  // >= 2 (validated).
  for (int64_t i = 0; i < spec.num_requests; ++i) {
    SimRequest r;
    r.session = static_cast<int32_t>(i);
    const int64_t u = rng->Length(kUserMessageMean, kUserMessageSigma, 1, room - 1);
    const int64_t o = rng->Length(kShareGptOutputMean, kShareGptOutputSigma, 1, room - u);
    r.prompt = system;
    rng->AppendTokens(u, spec.vocab_size, &r.prompt);
    rng->AppendTokens(o, spec.vocab_size, &r.output);
    w->requests.push_back(std::move(r));
  }
}

void GenerateMultiTurn(const WorkloadSpec& spec, Rng* rng, Workload* w) {
  const int64_t conversations = spec.num_requests / spec.turns;
  for (int64_t c = 0; c < conversations; ++c) {
    std::vector<int32_t> history;  // Previous turn's prompt + output.
    for (int k = 0; k < spec.turns; ++k) {
      // Room for this turn, keeping 1 user + 1 output token for each later turn.
      const int64_t later = 2 * static_cast<int64_t>(spec.turns - 1 - k);
      const int64_t room = spec.max_model_len - static_cast<int64_t>(history.size()) - later;
      SimRequest r;
      r.session = static_cast<int32_t>(c);
      r.turn = k;
      r.next = k + 1 < spec.turns ? static_cast<int32_t>(w->requests.size() + 1) : -1;
      const int64_t u = rng->Length(kUserMessageMean, kUserMessageSigma, 1, room - 1);
      const int64_t o = rng->Length(kShareGptOutputMean, kShareGptOutputSigma, 1, room - u);
      r.prompt = std::move(history);
      rng->AppendTokens(u, spec.vocab_size, &r.prompt);
      rng->AppendTokens(o, spec.vocab_size, &r.output);
      history = r.prompt;
      history.insert(history.end(), r.output.begin(), r.output.end());
      w->requests.push_back(std::move(r));
    }
  }
}

}  // namespace

std::string_view KvWorkloadName(KvWorkload workload) {
  switch (workload) {
    case KvWorkload::kShareGpt:
      return "sharegpt";
    case KvWorkload::kSharedPrefix:
      return "shared_prefix";
    case KvWorkload::kMultiTurn:
      return "multi_turn";
  }
  return "?";
}

Result<KvWorkload> ParseKvWorkload(std::string_view name) {
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (KvWorkload w : kAllKvWorkloads) {
    if (n == KvWorkloadName(w)) return w;
  }
  return InvalidArgument("unknown workload '" + std::string(name) +
                         "' (expected sharegpt, shared_prefix or multi_turn)");
}

int64_t Workload::TotalPromptTokens() const {
  int64_t n = 0;
  for (const SimRequest& r : requests) n += static_cast<int64_t>(r.prompt.size());
  return n;
}

int64_t Workload::TotalOutputTokens() const {
  int64_t n = 0;
  for (const SimRequest& r : requests) n += static_cast<int64_t>(r.output.size());
  return n;
}

Result<Workload> GenerateWorkload(const WorkloadSpec& spec) {
  if (spec.num_requests < 1) return InvalidArgument("a workload needs at least one request");
  if (spec.num_requests > (int64_t{1} << 30)) return InvalidArgument("too many requests");
  if (spec.vocab_size < 2) return InvalidArgument("vocabulary must have at least 2 tokens");
  if (spec.max_model_len < 2) return InvalidArgument("max_model_len must be >= 2");
  if (spec.kind == KvWorkload::kSharedPrefix &&
      (spec.system_prompt_tokens < 0 || spec.system_prompt_tokens + 2 > spec.max_model_len)) {
    return InvalidArgument("system prompt of " + std::to_string(spec.system_prompt_tokens) +
                           " tokens leaves no room in max_model_len " +
                           std::to_string(spec.max_model_len));
  }
  if (spec.kind == KvWorkload::kMultiTurn) {
    if (spec.turns < 1) return InvalidArgument("turns must be >= 1");
    if (spec.num_requests < spec.turns) {
      return InvalidArgument("multi_turn needs num_requests >= turns (one conversation)");
    }
    if (2 * static_cast<int64_t>(spec.turns) > spec.max_model_len) {
      return InvalidArgument("max_model_len cannot hold " + std::to_string(spec.turns) + " turns");
    }
  }
  Workload w;
  w.kind = spec.kind;
  Rng rng(MixSeed(spec.seed ^ MixSeed(static_cast<uint64_t>(spec.kind) + 1)));
  switch (spec.kind) {
    case KvWorkload::kShareGpt:
      GenerateShareGpt(spec, &rng, &w);
      break;
    case KvWorkload::kSharedPrefix:
      GenerateSharedPrefix(spec, &rng, &w);
      break;
    case KvWorkload::kMultiTurn:
      GenerateMultiTurn(spec, &rng, &w);
      break;
  }
  return w;
}

}  // namespace kvengine
