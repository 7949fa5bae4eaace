// FormatBenchText, FormatBenchJson and the summary rows both the text and the HTML report show.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/serve_report.h"

namespace kvengine::loadgen {
namespace {

using ordered = nlohmann::ordered_json;

constexpr int kLabelWidth = 40;
constexpr int kRuleWidth = 50;
constexpr size_t kErrorsShown = 5;

std::string Fixed(double v) { return fmt::format("{:.2f}", v); }
std::string Percent(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}", *v * 100) : "n/a";
}
std::string Count(const std::optional<double>& v) { return v ? fmt::format("{:.0f}", *v) : "n/a"; }

void AddSection(std::vector<ReportLine>* out, const std::string& name) {
  out->push_back({"", name});
}

void AddLatency(std::vector<ReportLine>* out, const std::string& section, const std::string& name,
                const Distribution& d) {
  AddSection(out, section);
  out->push_back({"Mean " + name + " (ms):", Fixed(d.mean)});
  out->push_back({"P50 " + name + " (ms):", Fixed(d.p50)});
  out->push_back({"P90 " + name + " (ms):", Fixed(d.p90)});
  out->push_back({"P99 " + name + " (ms):", Fixed(d.p99)});
}

std::string WorkloadText(const BenchServeOptions& o, int64_t conversations) {
  std::string s = fmt::format("{}, {} requests", KvWorkloadName(o.workload), o.num_prompts);
  if (o.workload == KvWorkload::kMultiTurn) {
    s += fmt::format(" ({} conversations x {} turns)", conversations, o.turns);
  } else if (o.workload == KvWorkload::kSharedPrefix) {
    s += fmt::format(" (system prompt {} tokens)", o.system_prompt_tokens);
  }
  return s + fmt::format(", seed {}", o.seed);
}

std::string CapsText(const LengthCaps& c) {
  auto cap = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("none"); };
  return "prompt " + cap(c.max_prompt_tokens) + ", output " + cap(c.max_output_tokens);
}

ordered Nullable(const std::optional<double>& v) { return v ? ordered(*v) : ordered(nullptr); }
ordered NullableCount(const std::optional<double>& v) {
  return v ? ordered(int64_t(std::llround(*v))) : ordered(nullptr);
}

void PutLatency(ordered& j, const std::string& key, const Distribution& d) {
  j["mean_" + key + "_ms"] = d.mean;
  j["median_" + key + "_ms"] = d.p50;
  j["p50_" + key + "_ms"] = d.p50;
  j["p90_" + key + "_ms"] = d.p90;
  j["p99_" + key + "_ms"] = d.p99;
}

}  // namespace

std::string RateText(double rate) { return std::isinf(rate) ? "inf" : fmt::format("{:g}", rate); }

std::vector<ReportLine> ReportLines(const BenchServeResult& r) {
  const BenchServeOptions& o = r.options;
  const BenchSummary& s = r.summary;
  std::vector<ReportLine> l;
  l.push_back({"Server:", o.url});
  l.push_back({"Model:", fmt::format("{} (max_model_len {}, vocab {})", r.server.model,
                                     r.server.max_model_len, o.vocab_size)});
  l.push_back({"Workload:", WorkloadText(o, r.conversations)});
  l.push_back({"Length caps:", CapsText(o.caps)});
  l.push_back(
      {"Traffic:", fmt::format("request rate {}, max concurrency {}", RateText(o.load.request_rate),
                               o.load.max_concurrency > 0 ? std::to_string(o.load.max_concurrency)
                                                          : std::string("none"))});
  l.push_back({"Successful requests:", std::to_string(s.completed)});
  l.push_back({"Failed requests:", std::to_string(s.failed)});
  l.push_back({"Benchmark duration (s):", Fixed(s.duration_s)});
  l.push_back({"Total input tokens:", std::to_string(s.total_input_tokens)});
  l.push_back({"Total generated tokens:", std::to_string(s.total_output_tokens)});
  l.push_back({"Request throughput (req/s):", Fixed(s.request_throughput)});
  l.push_back({"Output token throughput (tok/s):", Fixed(s.output_throughput)});
  l.push_back({"Total token throughput (tok/s):", Fixed(s.total_token_throughput)});
  AddLatency(&l, "Time to First Token", "TTFT", s.ttft_ms);
  AddLatency(&l, "Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
  AddLatency(&l, "Inter-token Latency", "ITL", s.itl_ms);
  AddLatency(&l, "End-to-end Latency", "E2EL", s.e2e_ms);
  AddSection(&l, "Server /metrics");
  l.push_back({"Prefix cache hit rate (%):", Percent(s.prefix_cache_hit_rate)});
  l.push_back({"Prompt tokens computed (%):", Percent(s.prompt_computed_frac)});
  l.push_back({"Cached prompt tokens in usage (%):", Percent(s.usage_cached_frac)});
  l.push_back({"Peak KV cache usage (%):", Percent(s.peak_kv_usage)});
  l.push_back({"Peak running requests:", Count(s.peak_running)});
  l.push_back({"Preemptions:", Count(s.preemptions)});
  return l;
}

std::string FormatBenchText(const BenchServeResult& r) {
  std::string out = fmt::format("{:=^{}}\n", " Serving Benchmark Result ", kRuleWidth);
  for (const ReportLine& line : ReportLines(r)) {
    if (line.label.empty()) {
      out += fmt::format("{:-^{}}\n", line.value, kRuleWidth);
    } else {
      out += fmt::format("{:<{}}{}\n", line.label, kLabelWidth, line.value);
    }
  }
  out += std::string(kRuleWidth, '=') + "\n";
  if (!r.observations.metrics_error.empty()) {
    out += "note: /metrics: " + r.observations.metrics_error + "\n";
  }
  size_t shown = 0;
  for (const auto& [message, count] : r.summary.errors) {
    if (shown++ == kErrorsShown) break;
    out += fmt::format("failed x{}: {}\n", count, message);
  }
  return out;
}

std::string FormatBenchJson(const BenchServeResult& r) {
  const BenchServeOptions& o = r.options;
  const BenchSummary& s = r.summary;
  ordered j = ordered::object();
  j["url"] = o.url;
  j["model"] = r.server.model;
  j["max_model_len"] = r.server.max_model_len;
  j["vocab_size"] = o.vocab_size;
  j["workload"] = KvWorkloadName(o.workload);
  j["num_prompts"] = o.num_prompts;
  j["conversations"] = r.conversations;
  j["turns"] = o.workload == KvWorkload::kMultiTurn ? ordered(o.turns) : ordered(1);
  j["system_prompt_tokens"] =
      o.workload == KvWorkload::kSharedPrefix ? ordered(o.system_prompt_tokens) : ordered(nullptr);
  j["seed"] = o.seed;
  j["request_rate"] =
      std::isinf(o.load.request_rate) ? ordered(nullptr) : ordered(o.load.request_rate);
  j["max_concurrency"] =
      o.load.max_concurrency > 0 ? ordered(o.load.max_concurrency) : ordered(nullptr);
  j["max_prompt_tokens"] =
      o.caps.max_prompt_tokens > 0 ? ordered(o.caps.max_prompt_tokens) : ordered(nullptr);
  j["max_output_tokens"] =
      o.caps.max_output_tokens > 0 ? ordered(o.caps.max_output_tokens) : ordered(nullptr);
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = s.duration_s;
  j["total_input_tokens"] = s.total_input_tokens;
  j["total_output_tokens"] = s.total_output_tokens;
  j["request_throughput"] = s.request_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  PutLatency(j, "ttft", s.ttft_ms);
  PutLatency(j, "tpot", s.tpot_ms);
  PutLatency(j, "itl", s.itl_ms);
  PutLatency(j, "e2el", s.e2e_ms);
  j["prefix_cache_hit_rate"] = Nullable(s.prefix_cache_hit_rate);
  j["prompt_computed_fraction"] = Nullable(s.prompt_computed_frac);
  j["usage_cached_fraction"] = Nullable(s.usage_cached_frac);
  j["peak_kv_cache_usage"] = Nullable(s.peak_kv_usage);
  j["peak_running_requests"] = NullableCount(s.peak_running);
  j["preemptions"] = NullableCount(s.preemptions);
  j["metrics_samples"] = r.observations.timeline.size();
  j["metrics_error"] = r.observations.metrics_error.empty() ? ordered(nullptr)
                                                            : ordered(r.observations.metrics_error);
  ordered errors = ordered::array();
  for (const auto& [message, count] : s.errors) {
    errors.push_back({{"message", message}, {"count", count}});
  }
  j["errors"] = std::move(errors);
  return j.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
}

}  // namespace kvengine::loadgen
