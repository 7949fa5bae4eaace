#include "server/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "base/strings.h"
#include "server/api_key.h"
#include "server/connection_stream.h"
#include "server/task_queue.h"

namespace kvengine::server {
namespace {

// Every endpoint and its one method (generate_routes.cc and info_routes.cc register them): a
// request for one of these paths with another method is answered 405 with Allow, not 404. GET
// endpoints answer HEAD too (httplib serves HEAD from the GET handler).
struct Endpoint {
  std::string_view path;
  std::string_view method;
};
constexpr Endpoint kEndpoints[] = {
    {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"}, {"/tokenize", "POST"},
    {"/detokenize", "POST"},     {"/health", "GET"},              {"/v1/models", "GET"},
    {"/metrics", "GET"},
};

// The Allow header for `path` when `method` is not one it serves; empty when it is, or when
// the path is not an endpoint (httplib then answers 404).
std::string DisallowedMethod(std::string_view path, std::string_view method) {
  for (const Endpoint& e : kEndpoints) {
    if (e.path != path) continue;
    if (e.method == "GET") return method == "GET" || method == "HEAD" ? "" : "GET, HEAD";
    return method == e.method ? "" : std::string(e.method);
  }
  return "";
}

// The JSON body of an error httplib produced itself (no route, body too large, bad request).
ApiError HttpLayerError(const httplib::Request& req, int status, uint64_t max_body_bytes) {
  ApiError e;
  e.http_status = status;
  switch (status) {
    case 404:
      e.type = "not_found_error";
      e.message = fmt::format("no endpoint {} {}", req.method, req.path);
      break;
    case 405:
      e.message = fmt::format("{} {} is not allowed: this endpoint takes {}", req.method, req.path,
                              DisallowedMethod(req.path, req.method));
      break;
    case 413:
      e.message = fmt::format("the request body is larger than the server's limit of {} bytes",
                              max_body_bytes);
      break;
    case 415:
      e.message = fmt::format("Content-Encoding {} is not supported: send the body uncompressed",
                              req.get_header_value("Content-Encoding"));
      break;
    default:
      e.message = fmt::format("HTTP error {}", status);
      if (status >= 500) e.type = "internal_error";
      break;
  }
  return e;
}

// Whether the request announces a body (which stays unread when it is refused before routing).
bool HasBody(const httplib::Request& req) {
  const std::string length = req.get_header_value("Content-Length");
  return req.has_header("Transfer-Encoding") || (!length.empty() && length != "0");
}

// Bytes a request line and headers may take, beside the body.
constexpr uint64_t kHeaderBytes = uint64_t{64} << 10;
// How long a connection refused unread (413, 415) keeps draining before it is closed.
constexpr std::chrono::milliseconds kLinger{2000};
// How often a connection waiting for its next request checks that the server still runs.
constexpr std::chrono::milliseconds kIdleCheck{10};

// Bytes one request may read: headers, the body, and chunked framing (a chunk-size line per
// chunk: 1/64 allows chunks down to about 1 KiB). Saturates instead of overflowing.
uint64_t RequestBudget(uint64_t max_body_bytes) {
  const uint64_t extra = max_body_bytes / 64 + kHeaderBytes;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return max_body_bytes > kMax - extra ? kMax : max_body_bytes + extra;
}

// What the pre-routing and error handlers need to know about the connection their thread
// serves (they get only the request): set by BoundedServer::process_and_close_socket.
struct ConnectionState {
  const ConnectionStream* stream = nullptr;
  bool close_after = false;  // The request's body was left unread: close the connection.
};
thread_local ConnectionState tl_connection;

// httplib::Server with
// - a usable listen backlog: 0.11.4 listens with a backlog of 5, so a burst of clients overflows
//   the accept queue and the kernel drops their handshakes (clients stall or fail). listen()
//   again on the bound socket only changes its backlog;
// - bounded reads: its own connection loop (httplib's process_and_close_socket, a private
//   virtual, overridden) over a ConnectionStream, so each request reads at most
//   `request_budget` bytes, and a connection whose request was refused unread is closed.
class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(uint64_t request_budget) : request_budget_(request_budget) {}
  bool RaiseBacklog() { return ::listen(svr_sock_, SOMAXCONN) == 0; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    const int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ConnectionStream stream(sock, Millis(read_timeout_sec_, read_timeout_usec_),
                            Millis(write_timeout_sec_, write_timeout_usec_));
    tl_connection = ConnectionState{&stream, false};
    bool ok = false;
    bool refused = false;
    // As httplib's loop: up to keep_alive_max_count requests, the last one answered with
    // "Connection: close".
    for (size_t left = keep_alive_max_count_; left > 0; --left) {
      if (!WaitForRequest(stream)) break;
      stream.BeginRequest(request_budget_);
      bool connection_closed = false;
      ok = process_request(stream, left == 1, connection_closed, nullptr);
      refused = stream.exceeded() || tl_connection.close_after;
      if (!ok || connection_closed || refused) break;
    }
    tl_connection = ConnectionState{};
    if (refused) {
      LingeringClose(sock, kLinger);
    } else {
      shutdown(sock, SHUT_RDWR);
      close(sock);
    }
    return ok;
  }

  // Waits up to the keep-alive timeout for the next request, returning early when the server
  // stops.
  bool WaitForRequest(const ConnectionStream& stream) const {
    if (stream.has_buffered()) return true;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    while (svr_sock_ != INVALID_SOCKET) {
      if (WaitReadable(stream.socket(), kIdleCheck)) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
    return false;
  }

  static std::chrono::milliseconds Millis(time_t sec, time_t usec) {
    return std::chrono::milliseconds(int64_t(sec) * 1000 + int64_t(usec) / 1000);
  }

  const uint64_t request_budget_;
};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)),
      state_(options_.limits, options_.poll_interval),
      http_(std::make_unique<BoundedServer>(RequestBudget(options_.max_body_bytes))) {}

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
  if (!static_cast<BoundedServer&>(*s->http_).RaiseBacklog()) {
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
  // Request bodies are read as sent: a compressed one would be inflated by httplib without any
  // bound (8 MiB of gzip is gigabytes), so Content-Encoding is refused before the body is read,
  // and the connection closed after the answer (the body stays unread).
  // The API key is checked before the body is read, so an unauthenticated client cannot make
  // the server read (or parse) its body; when it sent one, the connection is closed.
  const ApiKeyCheck api_key(options_.api_key);
  http_->set_pre_routing_handler([api_key](const httplib::Request& req, httplib::Response& res) {
    if (auto err = api_key.Check(req.path, req.get_header_value("Authorization"))) {
      ReplyError(res, *err);
      res.set_header("WWW-Authenticate", "Bearer");
      tl_connection.close_after = HasBody(req);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (const std::string allow = DisallowedMethod(req.path, req.method); !allow.empty()) {
      res.status = 405;  // The error handler writes the body.
      res.set_header("Allow", allow);
      tl_connection.close_after = HasBody(req);
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (encoding.empty() || EqualsIgnoreCase(encoding, "identity")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 415;  // The error handler writes the body.
    tl_connection.close_after = true;
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [max_body](const httplib::Request& req, httplib::Response& res) {
        // The request's read budget ran out (a chunked or unsized body, or huge headers):
        // httplib reports a failed read as 400.
        const bool exceeded = tl_connection.stream != nullptr && tl_connection.stream->exceeded();
        if (exceeded) {
          res.status = 413;
          res.body.clear();
        }
        // The connection loop closes these (the rest of the body is unread); say so. (httplib
        // still adds its Keep-Alive header; "Connection: close" is what clients act on.)
        if (exceeded || tl_connection.close_after) res.set_header("Connection", "close");
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
