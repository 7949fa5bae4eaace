// CompletionSender: sends one streamed POST /v1/completions with a token-id prompt and records
// what the client sees (request_stats.h). The body:
//   {"model", "prompt": [ids], "max_tokens", "ignore_eos": true, "temperature": 0,
//    "stream": true, "stream_options": {"include_usage": true}, "return_token_ids": true}
// so the output length is exactly max_tokens, and the server (kvengine, or vLLM) returns the
// generated ids that a multi-turn history needs. Chunks are timed as they arrive (the SSE
// reader gets httplib's pieces directly, however they split events).
//
// Failures never throw: a connection error, an HTTP error status, an error event in the stream,
// a malformed event or a stream cut before [DONE] make a record with ok = false and a message.
//
// Threads: one sender per thread (it owns an httplib::Client).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/serve/http_target.h"
#include "bench/serve/request_stats.h"

namespace kvengine::loadgen {

class CompletionSender {
 public:
  using Clock = std::chrono::steady_clock;

  // Times in records are seconds since `start`.
  CompletionSender(const HttpTarget& target, std::string model, Clock::time_point start,
                   int read_timeout_s);
  ~CompletionSender();
  CompletionSender(const CompletionSender&) = delete;
  CompletionSender& operator=(const CompletionSender&) = delete;

  // Sends the request; *generated gets the output token ids the server returned (empty when it
  // does not return them).
  RequestRecord Send(const std::vector<int32_t>& prompt, int64_t max_tokens,
                     std::vector<int32_t>* generated);

  // The JSON body for a prompt (exposed for tests).
  static std::string Body(const std::string& model, const std::vector<int32_t>& prompt,
                          int64_t max_tokens);

 private:
  double Now() const;

  const HttpTarget target_;
  const std::string model_;
  const Clock::time_point start_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace kvengine::loadgen
