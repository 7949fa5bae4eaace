// Text and JSON renderings of a KvPlan.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "base/size_parse.h"
#include "report/kv_plan_report.h"

namespace kvengine {
namespace {

std::string Line(const char* label, const std::string& value) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "  %-26s %s\n", label, value.c_str());
  return buf;
}

std::string BytesAndCount(uint64_t bytes) {
  return FormatBytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

}  // namespace

std::string FormatPlanText(const KvPlan& p) {
  const ModelConfig& m = p.model;
  std::string s = "KV cache plan for " + m.name + " (" + m.architecture + ", " +
                  std::to_string(m.n_layers) + " layers, hidden " + std::to_string(m.n_embd) + ")\n";
  s += Line("KV dtype", p.dtypes.Describe());
  s += Line("context / batch / block", std::to_string(p.options.ctx) + " tokens / " +
                                           std::to_string(p.options.batch) + " sequences / " +
                                           std::to_string(p.options.block_size) + " tokens");
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const GroupPlan& gp = p.groups[g];
    const std::string label = "group " + std::to_string(g);
    s += Line(label.c_str(), gp.spec.Describe() + "; " + FormatBytes(gp.bytes_per_block) +
                                 " per block, " + std::to_string(gp.blocks_per_sequence) +
                                 " blocks per sequence");
  }
  s += "\n";
  s += Line("KV bytes per token", BytesAndCount(p.kv_bytes_per_token));
  char naive[128];
  std::snprintf(naive, sizeof(naive), "%.0f bytes per token (2 x %d layers x %d hidden x %g B)",
                p.naive_bytes_per_token, m.n_layers, m.n_embd,
                NaiveElementBytes(p.dtypes.default_dtypes.k));
  s += Line("naive formula", naive);
  s += Line("KV bytes per sequence", BytesAndCount(p.kv_bytes_per_sequence));
  s += Line("KV bytes for the batch", BytesAndCount(p.kv_bytes_total));
  if (p.options.memory_bytes) {
    s += Line("memory budget", BytesAndCount(*p.options.memory_bytes));
    s += Line("pool allocates", BytesAndCount(p.pool_bytes));
    s += Line("max tokens", std::to_string(p.max_tokens));
    s += Line("max sequences at ctx", std::to_string(p.max_sequences));
  }
  if (!p.notes.empty()) {
    s += "\nWhy the exact figure differs from the naive one:\n";
    for (const std::string& n : p.notes) s += "  - " + n + "\n";
  }
  return s;
}

std::string FormatPlanJson(const KvPlan& p) {
  nlohmann::ordered_json j;
  j["model"] = p.model.name;
  j["architecture"] = p.model.architecture;
  j["kv_dtype"] = p.dtypes.Describe();
  j["ctx"] = p.options.ctx;
  j["batch"] = p.options.batch;
  j["block_size"] = p.options.block_size;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["kv_bytes_per_sequence"] = p.kv_bytes_per_sequence;
  j["kv_bytes_total"] = p.kv_bytes_total;
  j["naive_bytes_per_token"] = p.naive_bytes_per_token;
  if (p.options.memory_bytes) {
    j["memory_bytes"] = *p.options.memory_bytes;
    j["pool_bytes"] = p.pool_bytes;
    j["max_tokens"] = p.max_tokens;
    j["max_sequences"] = p.max_sequences;
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const GroupPlan& g : p.groups) {
    nlohmann::ordered_json o;
    o["kind"] = KvGroupKindName(g.spec.kind);
    o["layers"] = g.spec.layers.size();
    o["window"] = g.spec.window;
    o["sink_tokens"] = g.spec.sink_tokens;
    o["bytes_per_block"] = g.bytes_per_block;
    o["scale_bytes_per_block"] = g.scale_bytes_per_block;
    o["padding_bytes_per_block"] = g.padding_bytes_per_block;
    o["blocks_per_sequence"] = g.blocks_per_sequence;
    if (p.options.memory_bytes) o["num_blocks"] = g.num_blocks;
    groups.push_back(o);
  }
  j["groups"] = groups;
  j["notes"] = p.notes;
  return j.dump(2);
}

}  // namespace kvengine
