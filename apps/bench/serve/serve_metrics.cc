#include "bench/serve/serve_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/check.h"

namespace kvengine::loadgen {
namespace {

// after - before of a counter, when both snapshots have it.
std::optional<double> Delta(const ServerObservations& s,
                            std::optional<double> ServerSnapshot::*field) {
  if (!s.before || !s.after) return std::nullopt;
  const std::optional<double>& before = (*s.before).*field;
  const std::optional<double>& after = (*s.after).*field;
  if (!before || !after) return std::nullopt;
  return *after - *before;
}

std::optional<double> Ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

void SummarizeServer(const ServerObservations& s, BenchSummary* out) {
  out->prefix_cache_hit_rate =
      Ratio(Delta(s, &ServerSnapshot::prefix_hits), Delta(s, &ServerSnapshot::prefix_queries));
  out->prompt_computed_frac =
      Ratio(Delta(s, &ServerSnapshot::prompt_computed), Delta(s, &ServerSnapshot::prompt_tokens));
  out->preemptions = Delta(s, &ServerSnapshot::preemptions);
  for (const TimelineSample& t : s.timeline) {
    out->peak_kv_usage = std::max(out->peak_kv_usage.value_or(0), t.kv_usage);
    out->peak_running = std::max(out->peak_running.value_or(0), t.running);
  }
}

std::vector<std::pair<std::string, int64_t>> CountErrors(const std::vector<RequestRecord>& rs) {
  std::map<std::string, int64_t> counts;
  for (const RequestRecord& r : rs) {
    if (!r.ok) ++counts[r.error];
  }
  std::vector<std::pair<std::string, int64_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double p) {
  KV_CHECK(!sorted.empty());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

Distribution Distribute(std::vector<double> values, double scale) {
  Distribution d;
  if (values.empty()) return d;
  for (double& v : values) v *= scale;
  std::sort(values.begin(), values.end());
  d.count = int64_t(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / double(values.size());
  d.p50 = Percentile(values, 50);
  d.p90 = Percentile(values, 90);
  d.p99 = Percentile(values, 99);
  return d;
}

BenchSummary Summarize(const std::vector<RequestRecord>& records, double duration_s,
                       const ServerObservations& server) {
  BenchSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t cached = 0, cached_prompt = 0;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    if (!r.chunk_s.empty()) ttft.push_back(r.Ttft());
    if (std::optional<double> t = r.Tpot()) tpot.push_back(*t);
    r.AppendItls(&itl);
    e2e.push_back(r.E2e());
    if (r.cached_tokens >= 0) {
      cached += r.cached_tokens;
      cached_prompt += r.prompt_tokens;
    }
  }
  if (duration_s > 0) {
    s.request_throughput = double(s.completed) / duration_s;
    s.output_throughput = double(s.total_output_tokens) / duration_s;
    s.total_token_throughput = double(s.total_input_tokens + s.total_output_tokens) / duration_s;
  }
  s.ttft_ms = Distribute(std::move(ttft), 1000);
  s.tpot_ms = Distribute(std::move(tpot), 1000);
  s.itl_ms = Distribute(std::move(itl), 1000);
  s.e2e_ms = Distribute(std::move(e2e), 1000);
  if (cached_prompt > 0) s.usage_cached_frac = double(cached) / double(cached_prompt);
  SummarizeServer(server, &s);
  s.errors = CountErrors(records);
  return s;
}

}  // namespace kvengine::loadgen
