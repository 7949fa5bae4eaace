// A fixed-bucket histogram in Prometheus' shape: counts per upper bound, sum and count.
// Not thread-safe; its owner guards it.
#pragma once

#include <cstdint>
#include <vector>

namespace kvengine {

class Histogram {
 public:
  // `bounds`: ascending upper bounds; an implicit +Inf bucket follows.
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

  void Observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++count_;
  }
  const std::vector<double>& bounds() const { return bounds_; }
  // Per bucket (not cumulative); the last is +Inf.
  const std::vector<int64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  int64_t count() const { return count_; }

  // Bucket bounds for request latencies in seconds, 1 ms .. 60 s.
  static std::vector<double> LatencyBounds() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5,
            0.75,  1.0,    2.5,   5.0,  7.5,   10.0, 20.0,  40.0, 60.0};
  }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace kvengine
