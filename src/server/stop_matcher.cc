#include "server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace kvengine::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::Push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  // 1. The earliest complete stop string, if any (ties: the longer one, so it is reported).
  size_t best = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    if (pos < best || (pos == best && s.size() > matched_.size())) {
      best = pos;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // 2. Hold the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::Finish() {
  if (stopped_) return {};
  return std::exchange(held_, std::string());
}

}  // namespace kvengine::server
