// RunLoad: replays conversations (bench_workload.h) against a server and records every request.
//
// Traffic, as vLLM's benchmark_serving shapes it:
//   request_rate     conversations start as a Poisson process of this rate (per second); +inf:
//                    all at once. A multi_turn conversation's next turn is sent as soon as its
//                    previous turn completes (no think time).
//   max_concurrency  at most this many requests in flight (0: no limit other than kMaxWorkers).
//                    Requests that arrived wait for a free slot; their TTFT starts when sent.
// Both may be combined (rate-limited arrivals, at most N in flight).
//
// A failed turn ends its conversation: the later turns are recorded as failed ("not sent")
// without being sent, since their history does not exist.
//
// Threads: RunLoad blocks the caller, which schedules arrivals; one worker thread per slot
// sends requests (each with its own HTTP client). `progress` is called under a lock, from
// worker threads, after every finished request.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench/serve/bench_workload.h"
#include "bench/serve/completion_sender.h"
#include "bench/serve/http_target.h"
#include "bench/serve/request_stats.h"

namespace kvengine::loadgen {

// Requests in flight at most when max_concurrency is 0 (one thread and one connection each).
inline constexpr int kMaxWorkers = 1024;

struct LoadOptions {
  std::string model;  // Sent as "model".
  double request_rate = std::numeric_limits<double>::infinity();
  int max_concurrency = 0;   // 0: no limit.
  uint64_t seed = 1;         // Arrival times (bench_serve: its --seed).
  int read_timeout_s = 600;  // Longest wait for the next byte of an answer.
};

using ProgressFn = std::function<void(int64_t done, int64_t total)>;

struct LoadResult {
  std::vector<RequestRecord> records;  // In completion order.
  double duration_s = 0;               // From the start to the end of the last request.
};

// Times are seconds since `start` (the caller's clock origin, shared with metrics sampling).
LoadResult RunLoad(const HttpTarget& target, const std::vector<Conversation>& conversations,
                   const LoadOptions& options, CompletionSender::Clock::time_point start,
                   const ProgressFn& progress);

}  // namespace kvengine::loadgen
