#include "bench/serve/sse_reader.h"

namespace kvengine::loadgen {

bool SseReader::Feed(std::string_view bytes, std::vector<std::string>* events) {
  if (!error_.empty()) return false;
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // The second byte of "\r\n".
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      EndLine(events);
      if (!error_.empty()) return false;
      continue;
    }
    line_ += c;
    if (line_.size() + data_.size() > max_event_bytes_) {
      error_ = "an event of the stream exceeds " + std::to_string(max_event_bytes_) + " bytes";
      return false;
    }
  }
  return true;
}

void SseReader::EndLine(std::vector<std::string>* events) {
  std::string_view line = line_;
  if (line.empty()) {  // A blank line ends the event.
    if (has_data_) events->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() != ':') {
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data_) data_ += '\n';
      data_ += value;
      has_data_ = true;
    }
  }
  line_.clear();
}

}  // namespace kvengine::loadgen
