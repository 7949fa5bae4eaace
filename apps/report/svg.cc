#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kvengine {

std::string SvgNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double NiceStep(double max_value, int ticks) {
  const double raw = std::max(max_value, 1e-12) / std::max(ticks, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string SvgText(double x, double y, std::string_view anchor, int size, std::string_view s,
                    std::string_view extra) {
  return "<text x=\"" + SvgNum(x) + "\" y=\"" + SvgNum(y) + "\" text-anchor=\"" +
         std::string(anchor) + "\" font-size=\"" + std::to_string(size) + "\"" +
         std::string(extra) + ">" + XmlEscape(s) + "</text>\n";
}

std::string SvgLine(double x1, double y1, double x2, double y2, std::string_view stroke,
                    std::string_view extra) {
  return "<line x1=\"" + SvgNum(x1) + "\" y1=\"" + SvgNum(y1) + "\" x2=\"" + SvgNum(x2) +
         "\" y2=\"" + SvgNum(y2) + "\" stroke=\"" + std::string(stroke) + "\"" +
         std::string(extra) + "/>\n";
}

std::string SvgRect(double x, double y, double width, double height, std::string_view fill,
                    std::string_view title) {
  std::string s = "<rect x=\"" + SvgNum(x) + "\" y=\"" + SvgNum(y) + "\" width=\"" +
                  SvgNum(std::max(0.0, width)) + "\" height=\"" + SvgNum(std::max(0.0, height)) +
                  "\" fill=\"" + std::string(fill) + "\"";
  if (title.empty()) return s + "/>\n";
  return s + "><title>" + XmlEscape(title) + "</title></rect>\n";
}

std::string SvgOpen(double width, double height) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + SvgNum(width) + "\" height=\"" +
         SvgNum(height) + "\" viewBox=\"0 0 " + SvgNum(width) + " " + SvgNum(height) +
         "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

}  // namespace kvengine
