// Reading the server's /metrics: one snapshot (before and after a run), and MetricsSampler,
// which polls the gauges on its own thread while the run goes on (KV usage, running and waiting
// requests over time, for the peaks and the report's chart).
//
// Threads: MetricsSampler's constructor starts its thread; Stop() (or the destructor) from the
// owning thread joins it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kvengine/status.h"
#include "bench/serve/http_target.h"
#include "bench/serve/server_snapshot.h"

namespace kvengine::loadgen {

// GET /metrics, parsed. Errors: unreachable, not 200, or not Prometheus text.
Result<ServerSnapshot> FetchSnapshot(httplib::Client& client, const HttpTarget& target);

class MetricsSampler {
 public:
  using Clock = std::chrono::steady_clock;

  // Samples every `interval` from now on; sample times are seconds since `start`.
  MetricsSampler(const HttpTarget& target, Clock::time_point start,
                 std::chrono::milliseconds interval);
  ~MetricsSampler();
  MetricsSampler(const MetricsSampler&) = delete;
  MetricsSampler& operator=(const MetricsSampler&) = delete;

  // Stops sampling (after one last sample) and returns the samples that had a KV usage figure.
  std::vector<TimelineSample> Stop();

 private:
  void Loop();
  void SampleOnce(httplib::Client& client);

  const HttpTarget target_;
  const Clock::time_point start_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                    // Guarded by mu_.
  std::vector<TimelineSample> samples_;  // Written by the sampling thread only until joined.
  std::thread thread_;
};

}  // namespace kvengine::loadgen
