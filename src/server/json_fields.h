// JsonFields: typed, non-throwing reads of a request object's fields, each error naming the
// field. A field that is absent or null keeps the caller's default (OpenAI treats null as "not
// given"). Only the first error is kept; later reads after an error are no-ops, so a parser can
// read every field and check error() once.
//
// Numbers: nlohmann keeps integers as int64/uint64 and everything else as double; an integer
// field rejects fractional or out-of-range values (1e20 is "must be an integer", not a wrap).
// NaN and infinities cannot come from JSON text (the parser rejects them).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace kvengine::server {

class JsonFields {
 public:
  // `object` must outlive this reader. `prefix` is prepended to field names in errors
  // ("stream_options." for a nested object).
  explicit JsonFields(const nlohmann::json& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  // The field's value, or nullptr when absent or null.
  const nlohmann::json* Find(std::string_view name) const;

  void Bool(std::string_view name, bool* out);
  // An integer within [min, max].
  void Int(std::string_view name, int64_t min, int64_t max, int64_t* out);
  void Int(std::string_view name, int min, int max, int* out);
  // Any number; ranges are checked by the caller (SamplingParams::Validate words them).
  void Number(std::string_view name, double* out);
  void Number(std::string_view name, float* out);
  // A string of at most max_bytes bytes.
  void String(std::string_view name, size_t max_bytes, std::string* out);
  // Rejects a feature we do not implement when the client asks for it (a value other than
  // absent, null, false, 0, "", {} or []).
  void Unsupported(std::string_view name, std::string_view why);

  // Records an error found by the caller (keeps the first).
  void Fail(std::string_view name, std::string message);
  const std::optional<ApiError>& error() const { return error_; }
  // prefix + name: the `param` of an error.
  std::string Param(std::string_view name) const { return prefix_ + std::string(name); }

 private:
  const nlohmann::json& object_;
  std::string prefix_;
  std::optional<ApiError> error_;
};

// The JSON type name for messages: "string", "number", "boolean", "array", "object", "null".
std::string_view JsonTypeName(const nlohmann::json& j);

}  // namespace kvengine::server
