// Progress callback of the perf benchmarks: called with (done, total) units of work as they
// finish, on the thread that runs the benchmark. The CLI draws a progress bar from it.
#pragma once

#include <cstdint>
#include <functional>

namespace kvengine {

using BenchProgress = std::function<void(int64_t done, int64_t total)>;

}  // namespace kvengine
