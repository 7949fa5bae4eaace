// Reading a Prometheus text exposition (version 0.0.4, what GET /metrics answers) into samples,
// and summing a metric over its label sets. kvengine names its metrics "kvengine:<name>", vLLM
// "vllm:<name>"; SumMetric accepts either, so bench-serve reads both servers' figures.
//
// The text is untrusted: lines are checked one by one, and a malformed sample line is an error
// naming its line number (comments and blank lines are skipped).
//
// Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvengine/status.h"

namespace kvengine::loadgen {

struct PromSample {
  std::string name;                                         // "kvengine:kv_cache_usage_perc"
  std::vector<std::pair<std::string, std::string>> labels;  // In order, values unescaped.
  double value = 0;                                         // NaN and +-Inf allowed.
};

Result<std::vector<PromSample>> ParsePrometheusText(std::string_view text);

// The sum over every series named "kvengine:<name>" or "vllm:<name>" (a server serving one model
// has one); nullopt when there is none.
std::optional<double> SumMetric(const std::vector<PromSample>& samples, std::string_view name);

}  // namespace kvengine::loadgen
