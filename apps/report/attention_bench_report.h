// The reports of `kvengine bench attention`: text table, JSON rows, SVG chart.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "bench/perf/attention_bench.h"

namespace kvengine {

// A readable table, then paged/contiguous and each dtype's tokens/s over f16.
std::string FormatAttentionBenchText(const AttentionBenchResult& r);
// A JSON array of rows (attention_bench_format.cc lists the fields).
std::string FormatAttentionBenchJson(const AttentionBenchResult& r);
// A self-contained SVG chart (attention_bench_svg.cc): per layout and thread count, each dtype's
// fraction of the read bandwidth per context, with the 0.75 goal marked.
std::string FormatAttentionBenchSvg(const AttentionBenchResult& r);

}  // namespace kvengine
