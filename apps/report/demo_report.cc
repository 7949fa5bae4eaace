#include "report/demo_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/size_parse.h"
#include "quant/kv_dtype.h"

namespace kvengine::demo {
namespace {

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

std::string Percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

// "shared system prompt (384 tokens)": the scenario with the size that defines it.
std::string ScenarioLabel(Scenario s, const WorkloadOptions& o) {
  switch (s) {
    case Scenario::kSharedSystemPrompt:
      return fmt::format("shared system prompt ({} tok)", GroupDigits(o.system_prompt_tokens));
    case Scenario::kMultiTurnChat:
      return fmt::format("multi-turn chat ({} turns)", o.chat_turns);
    case Scenario::kLongDocument:
      return fmt::format("long document ({} tok)", GroupDigits(o.document_tokens));
  }
  return "?";
}

struct ScenarioTotals {
  int requests = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;
  std::vector<double> ttft;
};

ScenarioTotals Totals(const RunResult& run, const Scenario* scenario) {
  ScenarioTotals t;
  for (const RequestResult& r : run.requests) {
    if (scenario != nullptr && r.scenario != *scenario) continue;
    ++t.requests;
    t.prompt_tokens += r.prompt_tokens;
    t.cached_prompt_tokens += r.cached_prompt_tokens;
    t.ttft.push_back(r.ttft_s);
  }
  return t;
}

std::string ScenarioRow(const std::string& label, const ScenarioTotals& t) {
  return fmt::format("  {:<32}{:>5}{:>10}{:>10} {:>6}{:>9.2f} s{:>7.2f} s\n", label, t.requests,
                     GroupDigits(t.prompt_tokens), GroupDigits(t.cached_prompt_tokens),
                     Percent(Ratio(double(t.cached_prompt_tokens), double(t.prompt_tokens))),
                     Percentile(t.ttft, 50), Percentile(t.ttft, 100));
}

std::string RunRow(const char* label, const std::string& a, const std::string& b) {
  return fmt::format("  {:<34}{:>17}{:>17}\n", label, a, b);
}

std::string MemoryRow(const char* label, uint64_t bytes, const std::string& note) {
  return fmt::format("  {:<17}{:>12}   {}\n", label, FormatBytes(bytes), note);
}

nlohmann::ordered_json RunJson(const RunResult& r) {
  const std::vector<double> ttft = Ttfts(r);
  nlohmann::ordered_json j;
  j["kv_dtype"] = std::string(KvDtypeName(r.kv_dtype));
  j["wall_s"] = r.wall_s;
  j["generated_tokens"] = r.generated_tokens;
  j["generated_tokens_per_s"] = r.GeneratedTokensPerSecond();
  j["tokens_per_s"] = r.TokensPerSecond();
  j["ttft_p50_s"] = Percentile(ttft, 50);
  j["ttft_p90_s"] = Percentile(ttft, 90);
  j["ttft_max_s"] = Percentile(ttft, 100);
  j["kv_bytes_per_token"] = r.kv_bytes_per_token;
  j["peak_kv_bytes"] = r.peak_kv_bytes;
  j["peak_sequences"] = r.peak_sequences;
  j["peak_tokens_stored"] = r.peak_tokens_stored;
  j["prompt_tokens"] = r.prompt_tokens;
  j["cached_prompt_tokens"] = r.cached_prompt_tokens;
  j["prefix_hit_rate"] = r.PrefixHitRate();
  nlohmann::ordered_json requests = nlohmann::ordered_json::array();
  for (const RequestResult& q : r.requests) {
    requests.push_back({{"scenario", std::string(ScenarioKey(q.scenario))},
                        {"prompt_tokens", q.prompt_tokens},
                        {"cached_prompt_tokens", q.cached_prompt_tokens},
                        {"ttft_s", q.ttft_s},
                        {"e2e_s", q.e2e_s}});
  }
  j["requests"] = requests;
  j["contiguous_kv_bytes"] = r.ContiguousBytes();
  j["pool_bytes"] = r.pool_bytes;
  j["preemptions"] = r.preemptions;
  j["steps"] = r.steps;
  return j;
}

// The workload and the two runs of a report (f16 KV, int8 KV), checked present.
struct ReportRuns {
  const Workload& w;
  const RunResult& a;
  const RunResult& b;
};
ReportRuns Runs(const ReportInput& in) {
  KV_CHECK(in.workload != nullptr && in.f16 != nullptr && in.int8 != nullptr);
  return {*in.workload, *in.f16, *in.int8};
}

}  // namespace

std::string GroupDigits(int64_t value) {
  const bool negative = value < 0;
  std::string digits = std::to_string(negative ? -(value + 1) + uint64_t{1} : uint64_t(value));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string FormatReport(const ReportInput& in) {
  const auto [w, a, b] = Runs(in);
  std::string s;

  s += fmt::format("kvengine demo: {}{}\n", in.model,
                   in.synthetic ? " (synthetic: random weights, so text is noise; memory and "
                                  "speed are real)"
                                : "");
  s += fmt::format(
      "  {} layers, context {}, KV blocks of {} tokens, {} tokens per step, {} threads ({})\n",
      in.n_layers, GroupDigits(a.max_model_len), a.block_size, a.max_num_batched_tokens, in.threads,
      in.kernel_target);
  s += fmt::format(
      "  workload: {} requests, {} prompt tokens, {} generated ({} per request, greedy), "
      "run twice\n",
      w.requests.size(), GroupDigits(w.TotalPromptTokens()), GroupDigits(w.TotalOutputTokens()),
      w.options.max_tokens);
  if (in.shrunk_from > 0) {
    s += fmt::format(
        "  (lengths shrunk to fit the context: longest request {} -> {} tokens; -c "
        "raises the context)\n",
        GroupDigits(in.shrunk_from), GroupDigits(w.LongestRequest()));
  }

  s += "\n";
  s += fmt::format("  {:<32}{:>5}{:>10}{:>17}{:>11}{:>9}\n", "scenario (f16 run)", "reqs", "prompt",
                   "from cache", "TTFT p50", "max");
  for (Scenario sc : kAllScenarios) {
    s += ScenarioRow(ScenarioLabel(sc, w.options), Totals(a, &sc));
  }
  s += ScenarioRow("all", Totals(a, nullptr));

  s += "\n";
  s += RunRow("", "f16 KV", "int8 KV");
  const std::vector<double> ta = Ttfts(a), tb = Ttfts(b);
  s += RunRow("wall time", fmt::format("{:.2f} s", a.wall_s), fmt::format("{:.2f} s", b.wall_s));
  s += RunRow("generated tokens/s", fmt::format("{:.1f}", a.GeneratedTokensPerSecond()),
              fmt::format("{:.1f}", b.GeneratedTokensPerSecond()));
  s += RunRow("tokens/s (prompt computed + gen.)", fmt::format("{:.1f}", a.TokensPerSecond()),
              fmt::format("{:.1f}", b.TokensPerSecond()));
  s += RunRow("TTFT p50 / p90",
              fmt::format("{:.2f} / {:.2f} s", Percentile(ta, 50), Percentile(ta, 90)),
              fmt::format("{:.2f} / {:.2f} s", Percentile(tb, 50), Percentile(tb, 90)));
  s += RunRow("KV bytes per token", GroupDigits(int64_t(a.kv_bytes_per_token)),
              GroupDigits(int64_t(b.kv_bytes_per_token)));
  s += RunRow("peak KV in use (measured)", FormatBytes(a.peak_kv_bytes),
              FormatBytes(b.peak_kv_bytes));
  s += RunRow("prefix cache hit rate", Percent(a.PrefixHitRate()), Percent(b.PrefixHitRate()));

  const uint64_t contiguous = a.ContiguousBytes();
  s += "\nKV memory of this workload\n";
  s += MemoryRow("paged, f16", a.peak_kv_bytes,
                 fmt::format("measured peak; {} KV tokens at most, shared prefixes held once",
                             GroupDigits(a.peak_tokens_stored)));
  s += MemoryRow(
      "contiguous, f16", contiguous,
      fmt::format("{} sequences x {} ({} tokens): {:.1f}x the paged peak", a.peak_sequences,
                  FormatBytes(a.kv_bytes_per_max_sequence), GroupDigits(a.max_model_len),
                  Ratio(double(contiguous), double(a.peak_kv_bytes))));
  s += MemoryRow("paged, int8", b.peak_kv_bytes,
                 fmt::format("measured peak; {:.2f}x of f16",
                             Ratio(double(b.peak_kv_bytes), double(a.peak_kv_bytes))));
  s += "  (contiguous: the most sequences that held KV at once, each reserving the whole context\n"
       "   up front, as servers did before paged attention)\n";
  if (a.preemptions + b.preemptions > 0) {
    s += fmt::format("  ({} preemptions happened: the pool was smaller than the workload)\n",
                     a.preemptions + b.preemptions);
  }

  s += "\nNext\n";
  s += "  the same on a real model:  kvengine demo -m path/to/model.gguf   (llama GGUF; -c sets "
       "the\n"
       "                             context, --scale 0.25 a quarter of the workload for big "
       "models)\n";
  s += "  serve it (OpenAI API):     kvengine serve -m path/to/model.gguf --port 8080\n";
  s += "    curl -s localhost:8080/v1/completions -H 'Content-Type: application/json' \\\n";
  s += "      -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32, \"temperature\": 0}'\n";
  return s;
}

std::string FormatReportJson(const ReportInput& in) {
  const auto [w, a, b] = Runs(in);
  nlohmann::ordered_json j;
  j["model"] = in.model;
  j["synthetic"] = in.synthetic;
  j["n_layers"] = in.n_layers;
  j["threads"] = in.threads;
  j["kernel_target"] = in.kernel_target;
  j["max_model_len"] = a.max_model_len;
  j["block_size"] = a.block_size;
  j["max_num_batched_tokens"] = a.max_num_batched_tokens;
  nlohmann::ordered_json wl;
  wl["requests"] = w.requests.size();
  wl["prompt_tokens"] = w.TotalPromptTokens();
  wl["generated_tokens"] = w.TotalOutputTokens();
  wl["max_tokens"] = w.options.max_tokens;
  wl["longest_request"] = w.LongestRequest();
  if (in.shrunk_from > 0) wl["shrunk_from"] = in.shrunk_from;
  for (Scenario sc : kAllScenarios) {
    const ScenarioTotals t = Totals(a, &sc);
    nlohmann::ordered_json o;
    o["requests"] = t.requests;
    o["prompt_tokens"] = t.prompt_tokens;
    o["cached_prompt_tokens"] = t.cached_prompt_tokens;
    o["prefix_hit_rate"] = Ratio(double(t.cached_prompt_tokens), double(t.prompt_tokens));
    o["ttft_p50_s"] = Percentile(t.ttft, 50);
    o["ttft_max_s"] = Percentile(t.ttft, 100);
    wl["scenarios"][std::string(ScenarioKey(sc))] = o;
  }
  j["workload"] = wl;
  j["f16"] = RunJson(a);
  j["int8"] = RunJson(b);
  j["paged_kv_bytes"] = a.peak_kv_bytes;
  j["contiguous_kv_bytes"] = a.ContiguousBytes();
  j["contiguous_over_paged"] = Ratio(double(a.ContiguousBytes()), double(a.peak_kv_bytes));
  j["int8_kv_bytes"] = b.peak_kv_bytes;
  j["int8_over_f16"] = Ratio(double(b.peak_kv_bytes), double(a.peak_kv_bytes));
  return j.dump(2) + "\n";
}

}  // namespace kvengine::demo
