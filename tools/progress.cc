#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kvengine::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(frac * kWidth);
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string bar(size_t(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %3.0f%% %lld/%lld %.1fs", label_.c_str(), bar.c_str(),
               frac * 100.0, static_cast<long long>(done), static_cast<long long>(total), secs);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace kvengine::cli
