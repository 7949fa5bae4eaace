// The server under test: its base URL, HTTP clients for it, and what GET /v1/models says about
// the model (name, max_model_len, vocab_size — the last is kvengine's extension; a server
// without it needs --vocab-size).
//
// Threads: HttpTarget is immutable; each thread makes its own client (httplib::Client is not
// safe to share between threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kvengine/status.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace kvengine::loadgen {

struct HttpTarget {
  std::string scheme_host_port;  // "http://127.0.0.1:8080"
  std::string base_path;         // "" or "/prefix" (no trailing '/'): prepended to every path.
  std::string url;               // As given, for messages.
};

// "http://host:port[/base]", "https://...", or "host:port" (http). Errors: an unknown scheme, no
// host, or a port that is not 1-65535.
Result<HttpTarget> ParseBaseUrl(std::string_view url);

// A client with the given read timeout (seconds between bytes of an answer); connections are
// not kept alive (one request per connection, so a stale idle socket never fails a request).
std::unique_ptr<httplib::Client> MakeClient(const HttpTarget& target, int read_timeout_s);

// GET base_path + path; the body of a 200, else an Unavailable error naming the URL and why
// (connection refused, HTTP status and the server's message).
Result<std::string> GetText(httplib::Client& client, const HttpTarget& target,
                            std::string_view path);

struct ServerInfo {
  std::string model;          // The id to send as "model".
  int64_t max_model_len = 0;  // 0: not reported.
  int64_t vocab_size = 0;     // 0: not reported.
};

// GET /v1/models: its first model.
Result<ServerInfo> FetchServerInfo(const HttpTarget& target);

// "HTTP 503: <the error's message>" from an OpenAI-style error body (or its first bytes).
std::string HttpErrorMessage(int status, std::string_view body);

}  // namespace kvengine::loadgen
