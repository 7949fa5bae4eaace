#include "runtime/sampling_params.h"

#include <cmath>

#include <fmt/format.h>

namespace kvengine {

Status SamplingParams::Validate() const {
  // Comparisons are written so that NaN fails them.
  if (!(temperature >= 0.0f && temperature <= kMaxTemperature)) {
    return InvalidArgument(
        fmt::format("temperature must be in [0, {}], got {}", kMaxTemperature, temperature));
  }
  if (top_k < -1) {
    return InvalidArgument(fmt::format("top_k must be >= -1 (0 or -1 = off), got {}", top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return InvalidArgument(fmt::format("top_p must be in (0, 1], got {}", top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return InvalidArgument(fmt::format("min_p must be in [0, 1], got {}", min_p));
  }
  if (!(repetition_penalty > 0.0f && std::isfinite(repetition_penalty))) {
    return InvalidArgument(
        fmt::format("repetition_penalty must be > 0 and finite, got {}", repetition_penalty));
  }
  if (repetition_window < 0 || repetition_window > kMaxRepetitionWindow) {
    return InvalidArgument(fmt::format("repetition_window must be in [0, {}], got {}",
                                       kMaxRepetitionWindow, repetition_window));
  }
  return Status::Ok();
}

}  // namespace kvengine
