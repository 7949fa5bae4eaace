#include "bench/serve/http_target.h"

#include <httplib.h>

#include <charconv>

#include <nlohmann/json.hpp>

namespace kvengine::loadgen {
namespace {

using nlohmann::json;

constexpr int kConnectTimeoutS = 10;

}  // namespace

Result<HttpTarget> ParseBaseUrl(std::string_view url) {
  HttpTarget t;
  t.url = std::string(url);
  std::string_view rest = url;
  std::string scheme = "http";
  if (const size_t p = rest.find("://"); p != std::string_view::npos) {
    scheme = std::string(rest.substr(0, p));
    rest.remove_prefix(p + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return InvalidArgument("--url " + t.url + ": the scheme must be http or https");
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t colon = authority.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && authority.find(']', colon) == authority.npos;
  const std::string_view host = has_port ? authority.substr(0, colon) : authority;
  if (host.empty()) return InvalidArgument("--url " + t.url + ": no host");
  if (has_port) {
    const std::string_view port = authority.substr(colon + 1);
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      return InvalidArgument("--url " + t.url + ": the port must be 1-65535");
    }
  }
  t.scheme_host_port = scheme + "://" + std::string(authority);
  t.base_path = std::string(path);
  return t;
}

std::unique_ptr<httplib::Client> MakeClient(const HttpTarget& target, int read_timeout_s) {
  auto c = std::make_unique<httplib::Client>(target.scheme_host_port);
  c->set_connection_timeout(kConnectTimeoutS, 0);
  c->set_read_timeout(read_timeout_s, 0);
  c->set_write_timeout(kConnectTimeoutS, 0);
  c->set_keep_alive(false);
  return c;
}

std::string HttpErrorMessage(int status, std::string_view body) {
  std::string message;
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      message = e["message"].get<std::string>();
    } else if (e.is_string()) {
      message = e.get<std::string>();
    }
  }
  if (message.empty()) message = std::string(body.substr(0, 200));
  return "HTTP " + std::to_string(status) + (message.empty() ? "" : ": " + message);
}

Result<std::string> GetText(httplib::Client& client, const HttpTarget& target,
                            std::string_view path) {
  const std::string full = target.base_path + std::string(path);
  httplib::Result r = client.Get(full);
  if (!r) {
    return Unavailable("GET " + target.scheme_host_port + full + ": " +
                       httplib::to_string(r.error()));
  }
  if (r->status != 200) {
    return Unavailable("GET " + target.scheme_host_port + full + ": " +
                       HttpErrorMessage(r->status, r->body));
  }
  return r->body;
}

Result<ServerInfo> FetchServerInfo(const HttpTarget& target) {
  std::unique_ptr<httplib::Client> client = MakeClient(target, kConnectTimeoutS);
  KV_ASSIGN_OR_RETURN(std::string body, GetText(*client, target, "/v1/models"));
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const json* model = nullptr;
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty()) {
    model = &j["data"][0];
  }
  if (model == nullptr || !model->is_object() || !model->contains("id") ||
      !(*model)["id"].is_string()) {
    return Corrupt("GET " + target.url + "/v1/models: no model in the answer");
  }
  ServerInfo info;
  info.model = (*model)["id"].get<std::string>();
  for (auto [name, out] : {std::pair{"max_model_len", &info.max_model_len},
                           std::pair{"vocab_size", &info.vocab_size}}) {
    auto it = model->find(name);
    if (it != model->end() && it->is_number_integer() && it->get<int64_t>() > 0) {
      *out = it->get<int64_t>();
    }
  }
  return info;
}

}  // namespace kvengine::loadgen
