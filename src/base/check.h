// KV_CHECK / KV_DCHECK: invariants of the program itself (not of user input). A failed check
// prints file, line, condition and an optional streamed message, then aborts.
#pragma once

#include <sstream>
#include <string>

namespace kvengine::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `KV_CHECK(c) << x;` compile to a void expression.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace kvengine::internal

#define KV_CHECK(cond)                  \
  (cond) ? (void)0                      \
         : ::kvengine::internal::Voidify() & \
               ::kvengine::internal::CheckFailure(__FILE__, __LINE__, #cond)

#ifdef NDEBUG
#define KV_DCHECK(cond) \
  true ? (void)0 : ::kvengine::internal::Voidify() & ::kvengine::internal::CheckFailure(__FILE__, __LINE__, #cond)
#else
#define KV_DCHECK(cond) KV_CHECK(cond)
#endif
