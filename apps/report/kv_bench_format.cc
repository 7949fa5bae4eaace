// Text and JSON output of `kvengine bench kv` (the SVG chart is in kv_bench_svg.cc).
#include <cstdarg>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/size_parse.h"
#include "report/kv_bench_report.h"

namespace kvengine {

namespace {

// printf into a std::string (the table's fixed-width columns read best as format strings).
[[gnu::format(printf, 1, 2)]] std::string Printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, format, args);
  va_end(args);
  return s;
}

std::string JoinWorkloads(const KvBenchOptions& o) {
  std::string s;
  for (KvWorkload w : o.workloads) s += (s.empty() ? "" : ", ") + std::string(KvWorkloadName(w));
  return s;
}

std::string JoinPolicies(const KvBenchOptions& o) {
  std::string s;
  for (KvPolicy p : o.policies) s += (s.empty() ? "" : ", ") + std::string(KvPolicyName(p));
  return s;
}

}  // namespace

std::string FormatKvBenchText(const std::vector<KvBenchRow>& rows, const KvBenchOptions& o) {
  std::string out;
  out += Printf("kvengine bench kv: model %s, %s KV, block %d, KV budget %s, max_model_len %lld\n",
                o.model.c_str(), KvBenchDtypeName(o).c_str(), o.block_size,
                FormatBytes(o.kv_memory_bytes).c_str(), static_cast<long long>(o.max_model_len));
  for (const KvBenchRow& r : rows) {
    if (r.policy == KvPolicyName(KvPolicy::kPagedPrefix) ||
        r.policy == KvPolicyName(KvPolicy::kPagedNoPrefix)) {
      out += Printf("  paged pool: %lld token slots\n", static_cast<long long>(r.kv_token_slots));
      break;
    }
  }
  for (const KvBenchRow& r : rows) {
    if (r.policy == KvPolicyName(KvPolicy::kContiguous)) {
      out += Printf("  contiguous: %lld sequences x %lld tokens reserved\n",
                    static_cast<long long>(r.kv_token_slots / o.max_model_len),
                    static_cast<long long>(o.max_model_len));
      break;
    }
  }
  out += Printf(
      "  requests: %lld per workload (multi_turn: %lld conversations x %d turns), "
      "system prompt %d tokens, seed %llu\n",
      static_cast<long long>(o.num_requests),
      static_cast<long long>(o.turns > 0 ? o.num_requests / o.turns : 0), o.turns,
      o.system_prompt_tokens, static_cast<unsigned long long>(o.seed));
  out += Printf("  scheduler: %s FCFS, admission watermark %.3g of the paged pool\n",
                o.session_fcfs ? "session" : "arrival", o.watermark);
  out += "  workloads: " + JoinWorkloads(o) + "; policies: " + JoinPolicies(o) + "\n\n";

  out +=
      Printf("%-14s %-16s %6s %8s %6s %10s %9s %10s %7s %8s %7s\n", "workload", "policy", "peak",
             "mean", "util", "prefix_hit", "capacity", "completed", "steps", "preempt", "time_s");
  double total_seconds = 0;
  for (const KvBenchRow& r : rows) {
    total_seconds += r.seconds;
    out += Printf(
        "%-14s %-16s %6lld %8.1f %6.3f %10.3f %8.2fx %5lld/%-4lld %7lld %8lld %7.2f\n",
        r.workload.c_str(), r.policy.c_str(), static_cast<long long>(r.peak_concurrent_sequences),
        r.mean_concurrent_sequences, r.utilization, r.prefix_hit_rate, r.capacity_ratio,
        static_cast<long long>(r.requests_completed), static_cast<long long>(r.requests),
        static_cast<long long>(r.steps), static_cast<long long>(r.preemptions), r.seconds);
  }
  out += Printf(
      "\npeak: most sequences in one step (reached early, while every prompt is short); mean: "
      "sequences per step while\nrequests waited; util: filled / allocated KV token slots; "
      "prefix_hit: prompt tokens served from the\nprefix cache; capacity: peak / contiguous's "
      "peak; preempt: sequences preempted (recomputed later).\nTotal %.2f s.\n",
      total_seconds);
  return out;
}

std::string FormatKvBenchJson(const std::vector<KvBenchRow>& rows) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const KvBenchRow& r : rows) {
    nlohmann::ordered_json j;
    j["workload"] = r.workload;
    j["policy"] = r.policy;
    j["peak_concurrent_sequences"] = r.peak_concurrent_sequences;
    j["mean_concurrent_sequences"] = r.mean_concurrent_sequences;
    j["utilization"] = r.utilization;
    j["prefix_hit_rate"] = r.prefix_hit_rate;
    j["capacity_ratio"] = r.capacity_ratio;
    j["requests"] = r.requests;
    j["requests_completed"] = r.requests_completed;
    j["steps"] = r.steps;
    j["preemptions"] = r.preemptions;
    j["prompt_tokens"] = r.prompt_tokens;
    j["cached_prompt_tokens"] = r.cached_prompt_tokens;
    j["recompute_tokens"] = r.recompute_tokens;
    j["cached_recompute_tokens"] = r.cached_recompute_tokens;
    j["kv_token_slots"] = r.kv_token_slots;
    j["seconds"] = r.seconds;
    a.push_back(std::move(j));
  }
  return a.dump(2);
}

}  // namespace kvengine
