// The reports of `kvengine bench attention|decode|tiers`: for each, a text table, JSON rows and
// an SVG chart. Pure functions; any thread.
#pragma once

#include <string>

#include "bench/perf/attention_bench.h"
#include "bench/perf/decode_bench.h"
#include "bench/perf/tier_bench.h"

namespace kvengine {

// bench attention. A readable table, then paged/contiguous and each dtype's tokens/s over f16.
std::string FormatAttentionBenchText(const AttentionBenchResult& r);
// A JSON array of rows (attention_bench_format.cc lists the fields).
std::string FormatAttentionBenchJson(const AttentionBenchResult& r);
// A self-contained SVG chart (attention_bench_svg.cc): per layout and thread count, each dtype's
// fraction of the read bandwidth per context, with the 0.75 goal marked.
std::string FormatAttentionBenchSvg(const AttentionBenchResult& r);

// bench decode.
std::string FormatDecodeBenchText(const DecodeBenchResult& r);
// A JSON array of rows (decode_bench_format.cc lists the fields).
std::string FormatDecodeBenchJson(const DecodeBenchResult& r);
// A self-contained SVG bar chart (decode_bench_svg.cc): decode tokens/s by depth, batched decode
// tokens/s by batch size and prefill tokens/s, one bar per KV dtype.
std::string FormatDecodeBenchSvg(const DecodeBenchResult& r);

// bench tiers.
std::string FormatTierBenchText(const TierBenchResult& r);
// A JSON array of rows, one per scenario (tier_bench_format.cc lists the fields).
std::string FormatTierBenchJson(const TierBenchResult& r);
// A self-contained SVG chart (tier_bench_svg.cc): TTFT per row, and each tier's measured read
// rate beside its raw medium's.
std::string FormatTierBenchSvg(const TierBenchResult& r);

}  // namespace kvengine
