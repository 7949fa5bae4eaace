#include "bench/serve/prom_scrape.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace kvengine::loadgen {
namespace {

bool NameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9'); }

// Reads a metric or label name at *s (label names may not contain ':'; not worth checking).
bool ReadName(std::string_view* s, std::string* out) {
  size_t n = 0;
  while (n < s->size() && (n == 0 ? NameStart((*s)[n]) : NameChar((*s)[n]))) ++n;
  if (n == 0) return false;
  *out = std::string(s->substr(0, n));
  s->remove_prefix(n);
  return true;
}

void SkipSpaces(std::string_view* s) {
  while (!s->empty() && (s->front() == ' ' || s->front() == '\t')) s->remove_prefix(1);
}

// "value" with \\, \" and \n escapes, at *s (just after the opening quote).
bool ReadQuoted(std::string_view* s, std::string* out) {
  out->clear();
  while (!s->empty()) {
    const char c = s->front();
    s->remove_prefix(1);
    if (c == '"') return true;
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (s->empty()) return false;
    const char e = s->front();
    s->remove_prefix(1);
    *out += e == 'n' ? '\n' : e;  // \\ -> \, \" -> ", anything else kept as is.
  }
  return false;
}

// {a="x",b="y"} (a trailing comma allowed), at *s (just after '{').
bool ReadLabels(std::string_view* s, PromSample* out) {
  while (true) {
    SkipSpaces(s);
    if (!s->empty() && s->front() == '}') {
      s->remove_prefix(1);
      return true;
    }
    std::string name, value;
    if (!ReadName(s, &name)) return false;
    SkipSpaces(s);
    if (s->size() < 2 || s->front() != '=' || (*s)[1] != '"') return false;
    s->remove_prefix(2);
    if (!ReadQuoted(s, &value)) return false;
    out->labels.emplace_back(std::move(name), std::move(value));
    SkipSpaces(s);
    if (!s->empty() && s->front() == ',') s->remove_prefix(1);
  }
}

// A Go float: decimal or exponent notation, NaN, +Inf, -Inf.
bool ReadValue(std::string_view s, double* out) {
  const std::string text(s.substr(0, s.find_first_of(" \t")));  // A timestamp may follow.
  if (text == "NaN") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (text == "+Inf" || text == "Inf" || text == "-Inf") {
    *out = text == "-Inf" ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
    return true;
  }
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno != ERANGE && std::isfinite(*out);
}

bool ParseLine(std::string_view line, PromSample* out) {
  if (!ReadName(&line, &out->name)) return false;
  if (!line.empty() && line.front() == '{') {
    line.remove_prefix(1);
    if (!ReadLabels(&line, out)) return false;
  }
  if (line.empty() || (line.front() != ' ' && line.front() != '\t')) return false;
  SkipSpaces(&line);
  return ReadValue(line, &out->value);
}

}  // namespace

Result<std::vector<PromSample>> ParsePrometheusText(std::string_view text) {
  std::vector<PromSample> samples;
  int64_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    SkipSpaces(&line);
    if (line.empty() || line.front() == '#') continue;
    PromSample s;
    if (!ParseLine(line, &s)) {
      return Corrupt("/metrics line " + std::to_string(line_no) +
                     " is not a Prometheus sample: " + std::string(line.substr(0, 120)));
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

std::optional<double> SumMetric(const std::vector<PromSample>& samples, std::string_view name) {
  std::optional<double> sum;
  for (const PromSample& s : samples) {
    const std::string_view n = s.name;
    const size_t colon = n.find(':');
    if (colon == std::string_view::npos || n.substr(colon + 1) != name) continue;
    const std::string_view prefix = n.substr(0, colon);
    if (prefix != "kvengine" && prefix != "vllm") continue;
    sum = sum.value_or(0) + s.value;
  }
  return sum;
}

}  // namespace kvengine::loadgen
