#include "bench/serve/request_stats.h"

namespace kvengine::loadgen {

std::optional<double> RequestRecord::Tpot() const {
  if (!ok || chunk_s.empty() || output_tokens < 2) return std::nullopt;
  return (E2e() - Ttft()) / double(output_tokens - 1);
}

void RequestRecord::AppendItls(std::vector<double>* out) const {
  for (size_t i = 1; i < chunk_s.size(); ++i) out->push_back(chunk_s[i] - chunk_s[i - 1]);
}

}  // namespace kvengine::loadgen
