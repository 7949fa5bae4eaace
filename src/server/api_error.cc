#include "server/api_error.h"

#include <utility>

namespace kvengine::server {

nlohmann::json ApiError::ToJson() const {
  nlohmann::json e = nlohmann::json::object();
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  nlohmann::json j = nlohmann::json::object();
  j["error"] = std::move(e);
  return j;
}

ApiError BadRequest(std::string_view param, std::string message) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::string(param);
  return e;
}

ApiError Unavailable503(std::string message, int retry_after_s) {
  ApiError e;
  e.http_status = 503;
  e.message = std::move(message);
  e.type = "service_unavailable";
  e.retry_after_s = retry_after_s;
  return e;
}

ApiError InternalError(std::string message) {
  ApiError e;
  e.http_status = 500;
  e.message = std::move(message);
  e.type = "internal_error";
  return e;
}

ApiError FromEngineStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return BadRequest("", status.message());
    case StatusCode::kOutOfRange: {
      ApiError e = BadRequest("", status.message());
      e.code = "context_length_exceeded";
      return e;
    }
    case StatusCode::kUnavailable:
      return Unavailable503(status.message(), /*retry_after_s=*/1);
    case StatusCode::kOk:
    case StatusCode::kNotFound:
    case StatusCode::kCorrupt:
    case StatusCode::kInternal:
      break;
  }
  return InternalError(status.message());
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvengine::server
