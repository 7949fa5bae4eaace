// Injected time: eviction and scheduling read a Clock so tests drive them with a ManualClock.
#pragma once

#include <chrono>
#include <cstdint>

namespace kvengine {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds since an arbitrary epoch.
  virtual int64_t NowNanos() const = 0;
};

class SteadyClock final : public Clock {
 public:
  int64_t NowNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static SteadyClock& Get() {
    static SteadyClock clock;
    return clock;
  }
};

// A clock that moves only when told. Single-threaded use.
class ManualClock final : public Clock {
 public:
  int64_t NowNanos() const override { return now_; }
  void Advance(int64_t nanos) { now_ += nanos; }
  void Set(int64_t nanos) { now_ = nanos; }

 private:
  int64_t now_ = 0;
};

// Wall seconds on the steady clock since t0 (benchmarks' and the generator's timings).
inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kvengine
