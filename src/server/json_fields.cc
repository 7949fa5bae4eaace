#include "server/json_fields.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kvengine::server {

std::string_view JsonTypeName(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::binary:
      return "binary";
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "invalid";
}

const nlohmann::json* JsonFields::Find(std::string_view name) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonFields::Fail(std::string_view name, std::string message) {
  if (!error_) error_ = BadRequest(Param(name), std::move(message));
}

void JsonFields::Bool(std::string_view name, bool* out) {
  const nlohmann::json* v = error_ ? nullptr : Find(name);
  if (v == nullptr) return;
  if (!v->is_boolean()) {
    Fail(name, fmt::format("{} must be a boolean, got {}", Param(name), JsonTypeName(*v)));
    return;
  }
  *out = v->get<bool>();
}

void JsonFields::Int(std::string_view name, int64_t min, int64_t max, int64_t* out) {
  const nlohmann::json* v = error_ ? nullptr : Find(name);
  if (v == nullptr) return;
  const std::string range = fmt::format("[{}, {}]", min, max);
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (max < 0 || u > static_cast<uint64_t>(max) || (min > 0 && u < static_cast<uint64_t>(min))) {
      Fail(name, fmt::format("{} must be in {}, got {}", Param(name), range, u));
      return;
    }
    *out = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i < min || i > max) {
      Fail(name, fmt::format("{} must be in {}, got {}", Param(name), range, i));
      return;
    }
    *out = i;
  } else if (v->is_number_float()) {
    Fail(name, fmt::format("{} must be an integer, got {}", Param(name), v->get<double>()));
  } else {
    Fail(name, fmt::format("{} must be an integer, got {}", Param(name), JsonTypeName(*v)));
  }
}

void JsonFields::Int(std::string_view name, int min, int max, int* out) {
  int64_t v = *out;
  Int(name, int64_t{min}, int64_t{max}, &v);
  if (!error_) *out = static_cast<int>(v);
}

void JsonFields::Number(std::string_view name, double* out) {
  const nlohmann::json* v = error_ ? nullptr : Find(name);
  if (v == nullptr) return;
  if (!v->is_number()) {
    Fail(name, fmt::format("{} must be a number, got {}", Param(name), JsonTypeName(*v)));
    return;
  }
  *out = v->get<double>();
}

void JsonFields::Number(std::string_view name, float* out) {
  double d = *out;
  Number(name, &d);
  if (error_) return;
  // A double beyond float's range would become infinity (or UB in a plain cast); keep the
  // out-of-range value observable for the caller's range check instead.
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  *out = d > kFloatMax    ? std::numeric_limits<float>::infinity()
         : d < -kFloatMax ? -std::numeric_limits<float>::infinity()
                          : static_cast<float>(d);
}

void JsonFields::String(std::string_view name, size_t max_bytes, std::string* out) {
  const nlohmann::json* v = error_ ? nullptr : Find(name);
  if (v == nullptr) return;
  if (!v->is_string()) {
    Fail(name, fmt::format("{} must be a string, got {}", Param(name), JsonTypeName(*v)));
    return;
  }
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    Fail(name,
         fmt::format("{} is {} bytes; at most {} are allowed", Param(name), s.size(), max_bytes));
    return;
  }
  *out = s;
}

void JsonFields::Unsupported(std::string_view name, std::string_view why) {
  const nlohmann::json* v = error_ ? nullptr : Find(name);
  if (v == nullptr) return;
  const bool given = (v->is_boolean() && v->get<bool>()) ||
                     (v->is_number() && v->get<double>() != 0.0) ||
                     (v->is_string() && !v->get_ref<const std::string&>().empty()) ||
                     ((v->is_array() || v->is_object()) && !v->empty());
  if (given) Fail(name, fmt::format("{} is not supported: {}", Param(name), why));
}

}  // namespace kvengine::server
