#include "quant/kv_dtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/check.h"

namespace kvengine {
namespace {

struct NameEntry {
  std::string_view name;  // Lower case.
  KvDtype dtype;
};

// Canonical names first (KvDtypeName returns those), then the aliases ParseKvDtype accepts.
constexpr NameEntry kNames[] = {
    {"f32", KvDtype::kF32},
    {"f16", KvDtype::kF16},
    {"bf16", KvDtype::kBF16},
    {"fp8_e4m3", KvDtype::kFp8E4M3},
    {"fp8_e5m2", KvDtype::kFp8E5M2},
    {"int8", KvDtype::kInt8},
    {"int4", KvDtype::kInt4},
    // Aliases.
    {"fp32", KvDtype::kF32},
    {"float32", KvDtype::kF32},
    {"float", KvDtype::kF32},
    {"fp16", KvDtype::kF16},
    {"float16", KvDtype::kF16},
    {"half", KvDtype::kF16},
    {"bfloat16", KvDtype::kBF16},
    {"fp8", KvDtype::kFp8E4M3},
    {"fp8_e4m3fn", KvDtype::kFp8E4M3},
    {"e4m3", KvDtype::kFp8E4M3},
    {"e4m3fn", KvDtype::kFp8E4M3},
    {"e5m2", KvDtype::kFp8E5M2},
    {"q8", KvDtype::kInt8},
    {"q8_0", KvDtype::kInt8},
    {"q4", KvDtype::kInt4},
    {"q4_0", KvDtype::kInt4},
};

}  // namespace

std::string_view KvDtypeName(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32:
      return "f32";
    case KvDtype::kF16:
      return "f16";
    case KvDtype::kBF16:
      return "bf16";
    case KvDtype::kFp8E4M3:
      return "fp8_e4m3";
    case KvDtype::kFp8E5M2:
      return "fp8_e5m2";
    case KvDtype::kInt8:
      return "int8";
    case KvDtype::kInt4:
      return "int4";
  }
  return "unknown";  // Only reachable with a value outside the enum (a bug in the caller).
}

Result<KvDtype> ParseKvDtype(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const NameEntry& entry : kNames) {
    if (entry.name == lower) return entry.dtype;
  }
  std::string expected;
  for (KvDtype dtype : kAllKvDtypes) {
    if (!expected.empty()) expected += ", ";
    expected += KvDtypeName(dtype);
  }
  return InvalidArgument("unknown KV dtype '" + std::string(name) + "' (expected one of " +
                         expected + ")");
}

int Int4GroupSize(int n) {
  KV_CHECK(n >= 1) << "row length must be positive, got " << n;
  for (int g = std::min(n, 32); g > 1; --g) {
    if (n % g == 0) return g;
  }
  return 1;
}

RowFormat RowFormatOf(KvDtype dtype, int n) {
  KV_CHECK(n >= 1) << "row length must be positive, got " << n;
  const size_t un = static_cast<size_t>(n);
  switch (dtype) {
    case KvDtype::kF32:
      return {4 * un, 0, 0};
    case KvDtype::kF16:
    case KvDtype::kBF16:
      return {2 * un, 0, 0};
    case KvDtype::kFp8E4M3:
    case KvDtype::kFp8E5M2:
    case KvDtype::kInt8:
      return {un, 2, n};  // One f16 scale per row.
    case KvDtype::kInt4: {
      const int g = Int4GroupSize(n);
      // Two codes per byte; per group an f16 scale and an f16 min.
      return {(un + 1) / 2, static_cast<size_t>(n / g) * 4, g};
    }
  }
  KV_CHECK(false) << "invalid KvDtype " << static_cast<int>(dtype);
  return {};
}

}  // namespace kvengine
