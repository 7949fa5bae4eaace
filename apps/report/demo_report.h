// The one-screen report of `kvengine demo` (text and JSON): the workload per scenario, the f16
// and int8 KV runs side by side, paged KV memory against contiguous max-length preallocation,
// and how to run the same on a real model and how to serve it.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "demo/demo_runner.h"
#include "demo/demo_workload.h"

namespace kvengine::demo {

struct ReportInput {
  std::string model;       // The -m value as given ("small", "path/to/model.gguf").
  bool synthetic = false;  // Random weights.
  int64_t n_layers = 0;
  int threads = 0;
  std::string kernel_target;  // "AVX3".
  // Set when the workload's lengths were shrunk to fit the context: the original longest
  // request in tokens.
  int64_t shrunk_from = 0;
  const Workload* workload = nullptr;
  const RunResult* f16 = nullptr;   // The baseline run (f16 KV).
  const RunResult* int8 = nullptr;  // The same workload with int8 KV.
};

// "1,234,567".
std::string GroupDigits(int64_t value);

// The text report, about 30 lines of at most 100 columns, ending with the next commands.
std::string FormatReport(const ReportInput& in);
// One JSON object (pretty-printed) with the same figures.
std::string FormatReportJson(const ReportInput& in);

}  // namespace kvengine::demo
