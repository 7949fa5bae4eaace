// Overflow-checked integer arithmetic for sizes computed from untrusted input (file headers,
// request fields). Each returns false on overflow and leaves *out unspecified.
#pragma once

#include <cstdint>
#include <type_traits>

namespace kvengine {

template <typename T>
[[nodiscard]] bool CheckedAdd(T a, T b, T* out) {
  static_assert(std::is_integral_v<T>);
  return !__builtin_add_overflow(a, b, out);
}

template <typename T>
[[nodiscard]] bool CheckedMul(T a, T b, T* out) {
  static_assert(std::is_integral_v<T>);
  return !__builtin_mul_overflow(a, b, out);
}

// Rounds `v` up to a multiple of `align` (a power of two); false on overflow.
[[nodiscard]] inline bool CheckedAlignUp(uint64_t v, uint64_t align, uint64_t* out) {
  uint64_t t;
  if (!CheckedAdd<uint64_t>(v, align - 1, &t)) return false;
  *out = t & ~(align - 1);
  return true;
}

constexpr uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
constexpr uint64_t AlignUp(uint64_t v, uint64_t align) { return CeilDiv(v, align) * align; }

}  // namespace kvengine
