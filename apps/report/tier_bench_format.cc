// Text and JSON reports of the tier benchmark.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "report/perf_reports.h"

namespace kvengine {
namespace {

bool IsTier(TierScenario s) {
  switch (s) {
    case TierScenario::kRecompute:
    case TierScenario::kPool:
      return false;
    case TierScenario::kRam:
    case TierScenario::kDisk:
    case TierScenario::kRedis:
      return true;
  }
  return false;
}

// "-" where a figure does not apply (0 = not measured).
std::string Or(double v, const char* spec) {
  return v > 0 ? fmt::format(fmt::runtime(spec), v) : "-";
}

}  // namespace

std::string FormatTierBenchText(const TierBenchResult& r) {
  const TierBenchOptions& o = r.options;
  std::string s = fmt::format(
      "Tier benchmark: {}, {} thread{}, prompt {} random tokens ({} reusable blocks of {}, "
      "{} KV bytes/token), 1 greedy token.\n"
      "TTFT = Submit to first token; median of {} run{} ((a): {} run{}). Before each run: "
      "(c) Offload to RAM, (e) RAM emptied (Redis holds every block), (d) RAM spilled to disk "
      "and emptied; run order a, b, c, e, d.\n"
      "tier GB/s: the tier's own measure of its reads (RAM: block copies into the pool; disk, "
      "Redis: a prefetch, record checks included). raw: the same medium, same count and size, "
      "this run. path GB/s: bytes / (TTFT - pool TTFT).\n\n",
      r.model, r.threads, r.threads == 1 ? "" : "s", o.prompt_tokens, r.prefix_blocks, r.block_size,
      r.kv_bytes_per_token, o.repeat, o.repeat == 1 ? "" : "s", o.recompute_repeat,
      o.recompute_repeat == 1 ? "" : "s");
  s += fmt::format("{:<13} {:>9} {:>8} {:>8} {:>6} {:>8} {:>9} {:>8} {:>6} {:>9}  {}\n", "scenario",
                   "TTFT s", "speedup", "computed", "blocks", "MiB read", "tier GB/s", "raw GB/s",
                   "of raw", "path GB/s", "raw method");
  for (const TierBenchRow& row : r.rows) {
    const std::string name =
        fmt::format("({}) {}", char('a' + int(row.scenario)), TierScenarioName(row.scenario));
    if (row.skipped) {
      s += fmt::format("{:<13} {}\n", name, row.note);
      continue;
    }
    const bool tier = IsTier(row.scenario);
    std::string line =
        fmt::format("{:<13} {:>9.3f} {:>7.1f}x {:>8} {:>6} {:>8} {:>9} {:>8} {:>6} {:>9}  {}", name,
                    row.ttft_s, row.speedup_vs_recompute, row.prompt_tokens_computed,
                    row.scenario == TierScenario::kRecompute ? "-" : std::to_string(row.blocks),
                    tier ? fmt::format("{:.1f}", double(row.bytes) / double(1 << 20)) : "-",
                    Or(row.tier_gb_per_s, "{:.2f}"), Or(row.raw.gb_per_s, "{:.2f}"),
                    Or(row.fraction_of_raw, "{:.2f}"), Or(row.effective_gb_per_s, "{:.2f}"),
                    tier ? row.raw.method : "");
    line.erase(line.find_last_not_of(' ') + 1);
    s += line + "\n";
  }
  std::string notes;
  for (const TierBenchRow& row : r.rows) {
    if (!row.skipped && !row.note.empty()) {
      notes += fmt::format("  ({}) {}: {}\n", char('a' + int(row.scenario)),
                           TierScenarioName(row.scenario), row.note);
    }
  }
  if (!notes.empty()) s += "\nnotes:\n" + notes;
  s += "\ntargets (offload tiers):\n";
  for (const TierBenchTarget& t : r.targets) {
    if (!t.judged) {
      s += fmt::format("  {:<48} not judged (row not run or not served by its tier)\n", t.name);
    } else {
      const bool ratio = t.goal < 1;
      s += fmt::format("  {:<48} {}  {}\n", t.name,
                       ratio ? fmt::format("{:.2f}", t.value) : fmt::format("{:.1f}x", t.value),
                       t.met ? "met" : "NOT met");
    }
  }
  return s;
}

// Fields of each row: scenario, skipped, served, note (when set), ttft_s, ttft_runs_s,
// speedup_vs_recompute, prompt_tokens, prompt_tokens_computed, cached_tokens, blocks, bytes,
// tier_gb_per_s, raw_gb_per_s, fraction_of_raw, effective_gb_per_s, raw_method,
// raw_value_bytes, raw_read_bytes, raw_count, model, threads.
std::string FormatTierBenchJson(const TierBenchResult& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const TierBenchRow& row : r.rows) {
    nlohmann::ordered_json j;
    j["scenario"] = TierScenarioName(row.scenario);
    j["skipped"] = row.skipped;
    j["served"] = row.served;
    if (!row.note.empty()) j["note"] = row.note;
    j["ttft_s"] = row.ttft_s;
    j["ttft_runs_s"] = row.ttft_runs_s;
    j["speedup_vs_recompute"] = row.speedup_vs_recompute;
    j["prompt_tokens"] = r.options.prompt_tokens;
    j["prompt_tokens_computed"] = row.prompt_tokens_computed;
    j["cached_tokens"] = row.cached_tokens;
    j["blocks"] = row.blocks;
    j["bytes"] = row.bytes;
    j["tier_gb_per_s"] = row.tier_gb_per_s;
    j["raw_gb_per_s"] = row.raw.gb_per_s;
    j["fraction_of_raw"] = row.fraction_of_raw;
    j["effective_gb_per_s"] = row.effective_gb_per_s;
    j["raw_method"] = row.raw.method;
    j["raw_value_bytes"] = row.raw.value_bytes;
    j["raw_read_bytes"] = row.raw.read_bytes;
    j["raw_count"] = row.raw.count;
    j["model"] = r.model;
    j["threads"] = r.threads;
    rows.push_back(std::move(j));
  }
  return rows.dump(2);
}

}  // namespace kvengine
