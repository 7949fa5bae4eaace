// ApiKeyCheck: `kvengine serve --api-key KEY` (or KVENGINE_API_KEY), as vLLM's and llama.cpp's
// servers have it. Every path under /v1 then requires "Authorization: Bearer KEY"; /health,
// /metrics, /tokenize and /detokenize stay open (vLLM's rule: only /v1 is guarded). A request
// without the header, with another scheme, or with another key gets 401 in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": null,
//              "code": "invalid_api_key"}}
// (code null when no key was sent, as OpenAI answers), with "WWW-Authenticate: Bearer".
// The key is compared in constant time: both sides are hashed (SHA-256) and the digests compared
// with CRYPTO_memcmp, so neither the key's bytes nor its length leak through timing. Only the
// digest is kept.
//
// A value type; immutable after construction; any thread.
#pragma once

#include <optional>
#include <string_view>

#include "base/sha256.h"
#include "server/api_error.h"

namespace kvengine::server {

class ApiKeyCheck {
 public:
  ApiKeyCheck() = default;  // No key: every request passes.
  // An empty key means none.
  explicit ApiKeyCheck(std::string_view key);

  bool enabled() const { return enabled_; }
  // Whether `path` needs the key (it is under /v1).
  static bool Guards(std::string_view path);
  // nullopt when a request for `path` with this Authorization header value (empty when absent)
  // may pass; otherwise the 401 to answer.
  std::optional<ApiError> Check(std::string_view path, std::string_view authorization) const;

 private:
  bool enabled_ = false;
  Digest256 digest_{};
};

}  // namespace kvengine::server
