#include "base/size_parse.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace kvengine {
namespace {

// Splits "12.5GiB" into its number and its suffix; fails if there is no leading number.
bool SplitNumber(std::string_view text, double* number, std::string_view* suffix) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return false;
  std::string digits(text.substr(0, i));
  char* end = nullptr;
  *number = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size()) return false;
  *suffix = text.substr(i);
  while (!suffix->empty() && suffix->front() == ' ') suffix->remove_prefix(1);
  return true;
}


Result<uint64_t> Scale(std::string_view text, double number, double multiplier) {
  const double bytes = number * multiplier;
  if (!std::isfinite(bytes) || bytes < 0 || bytes >= 1.8e19) {
    return OutOfRange("size '" + std::string(text) + "' is too large");
  }
  return static_cast<uint64_t>(std::llround(bytes));
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  double number = 0;
  std::string_view suffix;
  if (!SplitNumber(text, &number, &suffix)) {
    return InvalidArgument("'" + std::string(text) + "' is not a size (expected e.g. 512MiB, 24GiB)");
  }
  struct Unit {
    const char* name;
    double multiplier;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},          {"b", 1},         {"k", 1024.0},    {"kib", 1024.0},  {"kb", 1e3},
      {"m", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6},    {"g", 1073741824.0},
      {"gib", 1073741824.0}, {"gb", 1e9}, {"t", 1099511627776.0}, {"tib", 1099511627776.0},
      {"tb", 1e12},
  };
  for (const Unit& unit : kUnits) {
    if (EqualsIgnoreCase(suffix, unit.name)) return Scale(text, number, unit.multiplier);
  }
  return InvalidArgument("unknown size suffix '" + std::string(suffix) + "' in '" +
                         std::string(text) + "' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)");
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  char buf[64];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f %s", v, kNames[unit]);
  }
  return buf;
}

Result<uint64_t> ParseTokenCount(std::string_view text) {
  double number = 0;
  std::string_view suffix;
  if (!SplitNumber(text, &number, &suffix)) {
    return InvalidArgument("'" + std::string(text) + "' is not a token count (e.g. 4096 or 32k)");
  }
  double multiplier = 1;
  if (suffix.empty()) {
    multiplier = 1;
  } else if (EqualsIgnoreCase(suffix, "k")) {
    multiplier = 1024;
  } else if (EqualsIgnoreCase(suffix, "m")) {
    multiplier = 1024.0 * 1024.0;
  } else {
    return InvalidArgument("unknown suffix '" + std::string(suffix) + "' in token count '" +
                           std::string(text) + "' (use k or M)");
  }
  const double v = number * multiplier;
  if (!std::isfinite(v) || v < 0 || v > 1e12 || v != std::floor(v)) {
    return OutOfRange("token count '" + std::string(text) + "' is not a whole number in range");
  }
  return static_cast<uint64_t>(v);
}

std::string FormatTokenCount(int64_t tokens) {
  if (tokens >= 1024 && tokens % 1024 == 0) return std::to_string(tokens / 1024) + "k";
  return std::to_string(tokens);
}

}  // namespace kvengine
