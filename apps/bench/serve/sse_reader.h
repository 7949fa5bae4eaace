// SseReader: an incremental parser of a Server-Sent Events byte stream, as OpenAI-compatible
// servers send streamed answers ("data: {json}\n\n" ... "data: [DONE]\n\n"). Bytes arrive in
// pieces split anywhere (inside a line, between "\r" and "\n", inside a UTF-8 character); each
// event's data comes out once the blank line that ends it has arrived.
//
// Lines end with "\n", "\r\n" or "\r". "data: x" (or "data:x") appends x to the event's data,
// several data lines joined by "\n"; lines starting with ':' are comments; other fields (event,
// id, retry) are ignored; a blank line dispatches the event when it has data.
//
// Bounded: a line or an event over max_event_bytes is an error, after which Feed() returns false
// and parses nothing more (a broken or hostile server cannot make the client buffer forever).
//
// Threads: one owner.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kvengine::loadgen {

class SseReader {
 public:
  static constexpr size_t kDefaultMaxEventBytes = size_t{16} << 20;

  explicit SseReader(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes` and appends the data of every event they complete to *events. False once an
  // error is set (error() says which).
  bool Feed(std::string_view bytes, std::vector<std::string>* events);

  const std::string& error() const { return error_; }
  // An unfinished line or event is buffered (a stream that ends now was cut short).
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  void EndLine(std::vector<std::string>* events);

  size_t max_event_bytes_;
  std::string line_;  // The current line, without its end.
  std::string data_;  // The current event's data lines, joined by "\n".
  bool has_data_ = false;
  bool after_cr_ = false;  // The last byte ended a line with '\r': a '\n' next belongs to it.
  std::string error_;
};

}  // namespace kvengine::loadgen
