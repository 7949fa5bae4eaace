// The reports of `kvengine bench tiers`: text table, JSON rows, SVG chart.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "bench/perf/tier_bench.h"

namespace kvengine {

std::string FormatTierBenchText(const TierBenchResult& r);
// A JSON array of rows, one per scenario (tier_bench_format.cc lists the fields).
std::string FormatTierBenchJson(const TierBenchResult& r);
// A self-contained SVG chart (tier_bench_svg.cc): TTFT per row, and each tier's measured read
// rate beside its raw medium's.
std::string FormatTierBenchSvg(const TierBenchResult& r);

}  // namespace kvengine
