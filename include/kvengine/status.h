// Status and Result<T>: errors at boundaries (files, config, requests) are returned values with a
// message, never exceptions or aborts. Invariants use KV_CHECK (check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/check.h"

namespace kvengine {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // The caller's input is wrong (a flag, a request field, a config value).
  kNotFound,         // A named thing (file, preset, sequence) does not exist.
  kCorrupt,          // A file or reply does not follow its format.
  kOutOfRange,       // A value or size is beyond what the format or resource allows.
  kUnavailable,      // A resource (remote tier, device) cannot be reached now.
  kInternal,         // A bug or an environment failure (allocation failed).
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>"; "ok" for OK.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design.
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design.
    KV_CHECK(!status_.ok()) << "Result constructed from an OK status without a value";
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    KV_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    KV_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    KV_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace kvengine

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define KV_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::kvengine::Status kv_status_ = (expr);   \
    if (!kv_status_.ok()) return kv_status_;  \
  } while (0)

#define KV_CONCAT_INNER_(a, b) a##b
#define KV_CONCAT_(a, b) KV_CONCAT_INNER_(a, b)
// KV_ASSIGN_OR_RETURN(auto x, ResultExpr()): binds the value or returns the error.
#define KV_ASSIGN_OR_RETURN(lhs, expr) \
  KV_ASSIGN_OR_RETURN_IMPL_(KV_CONCAT_(kv_result_, __LINE__), lhs, expr)
#define KV_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
