// ApiError: an HTTP error in OpenAI's shape, the one way every endpoint reports a failure:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "top_p", "code": null}}
// `param` names the request field at fault (dotted / indexed for nested ones: "messages[2].role",
// "stream_options.include_usage"), or is null when no single field is.
//
// Functions that can fail on user input return std::optional<ApiError>: nullopt means success.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "kvengine/status.h"

namespace kvengine::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;      // Empty: null in the JSON.
  std::string code;       // Empty: null in the JSON.
  int retry_after_s = 0;  // > 0: sent as a Retry-After header (503 when the queue is full).

  nlohmann::json ToJson() const;  // {"error": {...}}
};

// 400 invalid_request_error naming `param`.
ApiError BadRequest(std::string_view param, std::string message);
// 503 service_unavailable: loading, draining or a full queue (with Retry-After).
ApiError Unavailable503(std::string message, int retry_after_s);
// 500 internal_error: a bug or an engine failure; never the client's fault.
ApiError InternalError(std::string message);

// Maps an engine Submit() error: kInvalidArgument and kOutOfRange (can never fit) -> 400,
// kUnavailable (queue full) -> 503 with Retry-After, anything else -> 500.
ApiError FromEngineStatus(const Status& status);

// Serializes JSON for the wire. Invalid UTF-8 cannot reach a string we build (text comes from
// StreamDecoder or validated input), but the dump replaces it instead of throwing regardless.
std::string DumpJson(const nlohmann::json& j);

}  // namespace kvengine::server
