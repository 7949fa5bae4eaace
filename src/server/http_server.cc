#include "server/http_server.h"

#include <sys/socket.h>

#include <csignal>

#include <fmt/format.h>

#include "server/task_queue.h"

namespace kvengine::server {
namespace {

// The JSON body of an error httplib produced itself (no route, body too large, bad request).
ApiError HttpLayerError(const httplib::Request& req, int status, uint64_t max_body_bytes) {
  ApiError e;
  e.http_status = status;
  switch (status) {
    case 404:
      e.type = "not_found_error";
      e.message = fmt::format("no endpoint {} {}", req.method, req.path);
      break;
    case 413:
      e.message = fmt::format("the request body is larger than the server's limit of {} bytes",
                              max_body_bytes);
      break;
    default:
      e.message = fmt::format("HTTP error {}", status);
      if (status >= 500) e.type = "internal_error";
      break;
  }
  return e;
}

// httplib::Server with a usable listen backlog: 0.11.4 listens with a backlog of 5, so a burst
// of clients overflows the accept queue and the kernel drops their handshakes (clients stall or
// fail). listen() again on the bound socket only changes its backlog.
class BacklogServer : public httplib::Server {
 public:
  bool RaiseBacklog() { return ::listen(svr_sock_, SOMAXCONN) == 0; }
};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)),
      state_(options_.limits, options_.poll_interval),
      http_(std::make_unique<BacklogServer>()) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument(fmt::format("--port must be 0..65535, got {}", options.port));
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(options)));
  s->Configure();
  const std::string& host = s->options_.host;
  if (s->options_.port == 0) {
    s->port_ = s->http_->bind_to_any_port(host);
    if (s->port_ < 0) return Unavailable(fmt::format("cannot listen on {}", host));
  } else {
    if (!s->http_->bind_to_port(host, s->options_.port)) {
      return Unavailable(
          fmt::format("cannot listen on {}:{} (in use, or not an address of this "
                      "machine?)",
                      host, s->options_.port));
    }
    s->port_ = s->options_.port;
  }
  if (!static_cast<BacklogServer&>(*s->http_).RaiseBacklog()) {
    return Unavailable(fmt::format("cannot listen on {}:{}", host, s->port_));
  }
  HttpServer* raw = s.get();
  s->listener_ = std::thread([raw] {
    raw->http_->listen_after_bind();
    raw->listen_returned_ = true;
  });
  // httplib's stop() does nothing until the accept loop runs; wait for it, so that a
  // Shutdown() right after Start() cannot miss it and then wait forever for the listener.
  while (!s->http_->is_running() && !s->listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return s;
}

void HttpServer::Configure() {
  const int max_threads = options_.max_threads;
  http_->new_task_queue = [max_threads] { return new GrowingTaskQueue(max_threads); };
  http_->set_payload_max_length(size_t(options_.max_body_bytes));
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_write_timeout(options_.write_timeout_s, 0);
  http_->set_keep_alive_timeout(options_.keep_alive_timeout_s);
  http_->set_keep_alive_max_count(1000);
  http_->set_tcp_nodelay(true);
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port and
  // silently take half the connections; keep only SO_REUSEADDR (restart without TIME_WAIT
  // trouble), so a port in use is an error.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const uint64_t max_body = options_.max_body_bytes;
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [max_body](const httplib::Request& req, httplib::Response& res) {
        // A body means a handler already wrote its own error.
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ReplyError(res, HttpLayerError(req, res.status, max_body));
        return httplib::Server::HandlerResponse::Handled;
      }));
  ServerState* state = &state_;
  http_->set_logger([state](const httplib::Request&, const httplib::Response& res) {
    state->CountResponse(res.status);
  });
  RegisterGenerateRoutes(*http_, state_);
  RegisterInfoRoutes(*http_, state_);
}

void HttpServer::Shutdown(std::chrono::milliseconds drain_timeout) {
  if (shut_down_) return;
  shut_down_ = true;
  state_.BeginDrain();
  if (!state_.WaitIdle(std::chrono::steady_clock::now() + drain_timeout)) {
    // Handlers cancel their requests and return within a poll interval (or a write timeout
    // for a stream whose client stopped reading).
    state_.Abort();
    while (!state_.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(1))) {
    }
  }
  http_->stop();
  if (listener_.joinable()) listener_.join();
}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

}  // namespace kvengine::server
