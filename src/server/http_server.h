// HttpServer: kvengine's OpenAI-compatible HTTP server (cpp-httplib), a thin adapter over an
// InferenceBackend (the Engine). Endpoints:
//   POST /v1/completions, POST /v1/chat/completions   (request_parse.h lists the fields;
//                                                      "stream": true answers with SSE)
//   GET  /v1/models, GET /health (503 while loading or draining), GET /metrics (metrics.h)
//   POST /tokenize, POST /detokenize
// Errors are OpenAI-style JSON (api_error.h): 400 bad input, 404 unknown path, 413 body over
// max_body_bytes (whatever its framing: Content-Length, chunked or none), 415 a compressed body
// (Content-Encoding), 503 (+ Retry-After) loading, draining or queue full, 500 engine failure.
// 401 on /v1/* without the API key when one is set (api_key.h). A connection whose request got
// 413 or 415, or 401 with a body left unread, is closed after the answer.
//
// Lifecycle: Start() binds and serves at once, /health answering 503 {"status": "loading"};
// SetModel() publishes the loaded model (health 200); Shutdown() drains: health and new
// generation requests answer 503, requests in flight run to their end until the deadline, then
// the rest are cancelled (a stream gets an error event), and listening stops.
//
// Debian's cpp-httplib is a shared library: its compile-time limits do nothing, so the body
// limit, timeouts, keep-alive and the worker pool (GrowingTaskQueue: every open connection
// holds a thread) are all set through its setters here, and connections are served by our own
// loop over a ConnectionStream (connection_stream.h), which bounds every request's reads.
// Start() makes the process ignore SIGPIPE: httplib's own writes (none left on the server side
// since ConnectionStream sends with MSG_NOSIGNAL) would otherwise let a client that disconnects
// mid-write kill the server.
//
// Threads: Start/SetModel/Shutdown from one controlling thread; handlers run on the pool.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "kvengine/status.h"
#include "server/request_parse.h"
#include "server/server_state.h"

namespace kvengine::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                              // 0: an ephemeral port (port() says which).
  uint64_t max_body_bytes = uint64_t{8} << 20;  // Larger bodies get 413.
  // Worker threads at most; each open connection holds one. Beyond it connections wait.
  int max_threads = 512;
  int read_timeout_s = 30;       // A client sending its request more slowly is dropped.
  int write_timeout_s = 10;      // A client not reading its stream for this long is dropped
                                 // (and its request cancelled).
  int keep_alive_timeout_s = 5;  // Idle keep-alive connections are closed after this.
  // How often a waiting handler checks for a vanished client and for shutdown.
  std::chrono::milliseconds poll_interval{50};
  ParseLimits limits;
  // Non-empty: paths under /v1 require "Authorization: Bearer <api_key>" (api_key.h).
  std::string api_key;
};

class HttpServer {
 public:
  // Binds host:port and starts serving on a background thread (phase kLoading).
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);
  ~HttpServer();  // Shutdown(0) if not done.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return options_.host; }
  // Publishes the loaded model; /health turns 200. Once only.
  void SetModel(ServedModel model) { state_.SetModel(std::move(model)); }
  // Drains (see above) and stops listening; returns when no handler runs any more, so the
  // backend may then be stopped. Idempotent.
  void Shutdown(std::chrono::milliseconds drain_timeout);

  Phase phase() const { return state_.phase(); }
  int64_t in_flight() const { return state_.in_flight(); }

 private:
  explicit HttpServer(HttpServerOptions options);
  void Configure();

  HttpServerOptions options_;
  ServerState state_;
  std::unique_ptr<httplib::Server> http_;  // A BoundedServer (http_server.cc).
  int port_ = 0;
  std::thread listener_;
  std::atomic<bool> listen_returned_{false};
  bool shut_down_ = false;
};

}  // namespace kvengine::server
