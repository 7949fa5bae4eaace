// The reports of a bench-serve run:
//   text  one screen in the shape of vLLM's benchmark_serving summary, plus the server's
//         /metrics figures
//   JSON  one object with every figure (vLLM's key names where vLLM has the figure:
//         completed, duration, request_throughput, mean_ttft_ms, p99_itl_ms, ...); figures the
//         server did not export are null
//   SVG   a chart: KV-cache usage and running/waiting requests over the run (from /metrics),
//         and the distributions (CDFs) of TTFT and ITL with p50/p90/p99 marked
//   HTML  the text report's figures as a table, with the SVG inline (one self-contained file)
//
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "bench/serve/bench_serve.h"

namespace kvengine::loadgen {

// One row of the summary; a row with an empty label starts a section named by `value`.
struct ReportLine {
  std::string label;
  std::string value;
};

std::vector<ReportLine> ReportLines(const BenchServeResult& r);

std::string FormatBenchText(const BenchServeResult& r);
std::string FormatBenchJson(const BenchServeResult& r);  // Indented, ends with "\n".
std::string FormatBenchSvg(const BenchServeResult& r);
std::string FormatBenchHtml(const BenchServeResult& r);

// "inf" or "2.5": the request rate as the reports print it.
std::string RateText(double rate);

}  // namespace kvengine::loadgen
