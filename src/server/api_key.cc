#include "server/api_key.h"

#include <openssl/crypto.h>

#include <string>
#include <utility>

#include "base/strings.h"

namespace kvengine::server {
namespace {

// The token of "Bearer <token>" (scheme case-insensitive, surrounding blanks ignored); nullopt
// for another scheme or no token.
std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kBlank = " \t";
  constexpr std::string_view kScheme = "Bearer";
  const size_t b = authorization.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return std::nullopt;
  authorization.remove_prefix(b);
  if (authorization.size() <= kScheme.size() ||
      !EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme) ||
      kBlank.find(authorization[kScheme.size()]) == std::string_view::npos) {
    return std::nullopt;
  }
  authorization.remove_prefix(kScheme.size());
  const size_t start = authorization.find_first_not_of(kBlank);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t end = authorization.find_last_not_of(kBlank);
  return authorization.substr(start, end - start + 1);
}

ApiError Unauthorized(std::string message, std::string code) {
  ApiError e;
  e.http_status = 401;
  e.message = std::move(message);
  e.type = "invalid_request_error";
  e.code = std::move(code);
  return e;
}

}  // namespace

ApiKeyCheck::ApiKeyCheck(std::string_view key) : enabled_(!key.empty()) {
  if (enabled_) digest_ = Sha256Of(key);
}

bool ApiKeyCheck::Guards(std::string_view path) {
  return path == "/v1" || path.starts_with("/v1/");
}

std::optional<ApiError> ApiKeyCheck::Check(std::string_view path,
                                           std::string_view authorization) const {
  if (!enabled_ || !Guards(path)) return std::nullopt;
  if (authorization.empty()) {
    return Unauthorized(
        "You didn't provide an API key. You need to provide your API key in an Authorization "
        "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        "");
  }
  const std::optional<std::string_view> token = BearerToken(authorization);
  if (!token) {
    return Unauthorized(
        "The Authorization header must use Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        "invalid_api_key");
  }
  const Digest256 sent = Sha256Of(*token);
  if (CRYPTO_memcmp(sent.data(), digest_.data(), digest_.size()) != 0) {
    return Unauthorized("Incorrect API key provided.", "invalid_api_key");
  }
  return std::nullopt;
}

}  // namespace kvengine::server
