// The reports of `kvengine bench decode`: text table, JSON rows, SVG chart.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "bench/perf/decode_bench.h"

namespace kvengine {

std::string FormatDecodeBenchText(const DecodeBenchResult& r);
// A JSON array of rows (decode_bench_format.cc lists the fields).
std::string FormatDecodeBenchJson(const DecodeBenchResult& r);
// A self-contained SVG bar chart (decode_bench_svg.cc): decode tokens/s by depth, batched decode
// tokens/s by batch size and prefill tokens/s, one bar per KV dtype.
std::string FormatDecodeBenchSvg(const DecodeBenchResult& r);

}  // namespace kvengine
