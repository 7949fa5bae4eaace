// The reports of `kvengine bench kv`: text table, JSON rows, SVG chart.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "bench/kv/kv_bench.h"

namespace kvengine {

// An aligned table, preceded by the settings used and followed by the total run time.
std::string FormatKvBenchText(const std::vector<KvBenchRow>& rows, const KvBenchOptions& options);
// A JSON array with one object per row; every KvBenchRow field under its own name. No trailing
// newline (as FormatPlanJson).
std::string FormatKvBenchJson(const std::vector<KvBenchRow>& rows);
// A standalone SVG bar chart: peak concurrent sequences per workload (groups) x policy (bars),
// with the mean under load marked on each bar.
std::string FormatKvBenchSvg(const std::vector<KvBenchRow>& rows, const KvBenchOptions& options);

}  // namespace kvengine
