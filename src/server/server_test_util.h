// Test helpers for server/: the tiny synthetic model's tokenizer (built in memory), a scripted
// InferenceBackend, and raw loopback sockets for clients that vanish mid-request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf_writer.h"
#include "server/backend.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server::testing {

// The tokenizer of the `tiny` synthetic preset; built once, shared.
const Tokenizer& TinyTokenizer();
// A tokenizer read from the GGUF file in `writer` (its metadata alone); never freed (tests keep
// it in a function-local static). Checks that every step succeeds.
const Tokenizer* LeakedTokenizerOf(const GgufWriter& writer);

// A backend that "generates" a scripted token sequence: every `step` it emits the next token of
// `script` (cycling) for each choice of every running request, and a final kLength event after
// max_tokens (or kStop after a token in stop_token_ids / EOS). Its Stats() report one used KV
// block per running request, so tests can check that cancellation frees everything.
class FakeBackend : public InferenceBackend {
 public:
  FakeBackend(std::vector<int32_t> script, std::chrono::milliseconds step, int max_running = 64,
              int eos = -1);
  ~FakeBackend() override;

  Result<RequestId> Submit(RequestParams params, EventCallback on_event) override;
  void Cancel(RequestId id) override;
  void StopChoice(RequestId id, int choice) override;
  EngineStats Stats() const override;

  int64_t running() const;
  int64_t cancels() const { return cancels_.load(); }
  int64_t choice_stops() const { return choice_stops_.load(); }  // StopChoice calls that ended one.
  int64_t submits() const { return submits_.load(); }
  // Waits until no request runs; false after `timeout`.
  bool WaitIdle(std::chrono::milliseconds timeout) const;
  // Fails the next request with kError after its first token.
  void FailNext() { fail_next_ = true; }
  // While paused, no tokens are produced (requests stay queued/running).
  void Pause(bool paused) { paused_ = paused; }

 private:
  struct Running {
    RequestParams params;
    EventCallback on_event;
    std::vector<int64_t> produced;  // [choice]
    std::vector<bool> done;         // [choice]
    bool fail = false;
  };
  void Loop();
  // The final event of `choice` (Cancel, StopChoice), without cached-token figures.
  static RequestEvent FinalEvent(RequestId id, const Running& r, int choice, FinishReason reason);

  const std::vector<int32_t> script_;
  const std::chrono::milliseconds step_;
  const int max_running_;
  const int eos_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<RequestId, Running> running_;
  RequestId next_id_ = 1;
  bool stop_ = false;
  std::atomic<int64_t> cancels_{0}, submits_{0}, choice_stops_{0};
  std::atomic<bool> fail_next_{false}, paused_{false};
  std::thread thread_;
};

// A connected TCP socket to 127.0.0.1:port (-1 on failure). `receive_buffer_bytes` > 0 sets
// SO_RCVBUF before connecting (a small one makes a client that stops reading stall the
// server's writes sooner).
int ConnectLoopback(int port, int receive_buffer_bytes = 0);
// Sends all of `data`; false on error.
bool SendAll(int fd, const std::string& data);
// Reads until `needle` appears or `timeout`; returns what was read.
std::string ReadUntil(int fd, const std::string& needle, std::chrono::milliseconds timeout);
// An HTTP/1.1 POST with a JSON body (Connection: close, so a response ends the stream).
std::string PostRequest(const std::string& path, const std::string& body);

}  // namespace kvengine::server::testing
