// A one-line progress bar on stderr for long work (benchmarks, model generation, loading). It
// draws only when stderr is a terminal, at most ~10 times a second, and clears itself at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace kvengine::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void Update(int64_t done, int64_t total);
  void Finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace kvengine::cli
