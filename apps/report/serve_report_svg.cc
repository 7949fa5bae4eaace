// FormatBenchSvg and FormatBenchHtml: the picture of one bench-serve run.
//
// Geometry (user units, kWidth x kHeight):
//   title and subtitle                         y 0..50
//   timeline panel (KV usage %, left axis; running and waiting requests, right axis)
//                                              y kTimeTop..kTimeTop + kTimeH, x kLeft..kWidth -
//                                              kRight
//   two CDF panels side by side (TTFT, ITL)    y kCdfTop..kCdfTop + kCdfH
// Each CDF is drawn from kCdfPoints quantiles (not from every value), so the file stays small
// for any number of requests; its x axis ends at the maximum, or a little past p99 when the
// maximum is far beyond it, so a few outliers do not squash the curve (values past the axis are
// drawn at its end).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/svg.h"
#include "report/serve_report.h"

namespace kvengine::loadgen {
namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 640;
constexpr double kLeft = 64;
constexpr double kRight = 64;  // Right axis labels of the timeline.
constexpr double kTimeTop = 100;
constexpr double kTimeH = 200;
constexpr double kCdfTop = 390;
constexpr double kCdfH = 190;
constexpr double kCdfGap = 70;
constexpr int kCdfPoints = 200;
constexpr const char* kKvColour = "#1f5fa8";
constexpr const char* kKvFill = "#cfe0f3";
constexpr const char* kRunColour = "#d98b2b";
constexpr const char* kWaitColour = "#9a9a9a";
constexpr const char* kCdfColour = "#4c9a4c";

// A plot area and its value ranges; maps values to canvas coordinates.
struct Plot {
  double x0, y0, w, h;  // Top-left corner and size.
  double x_max, y_max;  // Axes run from 0.
  double X(double v) const { return x0 + w * std::clamp(v / x_max, 0.0, 1.0); }
  double Y(double v) const { return y0 + h - h * std::clamp(v / y_max, 0.0, 1.0); }
};

std::string Label(double v) { return fmt::format("{:g}", v); }

// A latency in ms with three or four significant digits and no exponent: 4372, 63.9, 2.05.
std::string MsLabel(double ms) {
  if (ms >= 100) return fmt::format("{:.0f}", ms);
  return ms >= 10 ? fmt::format("{:.1f}", ms) : fmt::format("{:.2f}", ms);
}

// Grid lines and labels: x ticks below, y ticks on the left (or right) side.
std::string Axes(const Plot& p, double x_step, double y_step, bool y_right,
                 const std::string& y_suffix) {
  std::string s;
  for (double v = 0; v <= p.y_max * 1.0001; v += y_step) {
    s += SvgLine(p.x0, p.Y(v), p.x0 + p.w, p.Y(v), v == 0 ? "#333" : "#e2e2e2");
    s += y_right ? SvgText(p.x0 + p.w + 6, p.Y(v) + 4, "start", 11, Label(v) + y_suffix)
                 : SvgText(p.x0 - 6, p.Y(v) + 4, "end", 11, Label(v) + y_suffix);
  }
  for (double v = 0; v <= p.x_max * 1.0001; v += x_step) {
    s += SvgLine(p.X(v), p.y0 + p.h, p.X(v), p.y0 + p.h + 4, "#333");
    s += SvgText(p.X(v), p.y0 + p.h + 16, "middle", 11, Label(v));
  }
  return s;
}

// A right-hand y axis's labels only (the grid belongs to the left axis).
std::string RightLabels(const Plot& p, double step) {
  std::string s;
  for (double v = 0; v <= p.y_max * 1.0001; v += step) {
    s += SvgText(p.x0 + p.w + 6, p.Y(v) + 4, "start", 11, Label(v));
  }
  return s;
}

std::string Polyline(const std::vector<std::pair<double, double>>& pts, const std::string& colour,
                     double width, const std::string& extra = "") {
  std::string s = "<polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" +
                  SvgNum(width) + "\"" + extra + " points=\"";
  for (const auto& [x, y] : pts) s += SvgNum(x) + "," + SvgNum(y) + " ";
  return s + "\"/>\n";
}

std::string Swatch(double x, double y, const std::string& colour, const std::string& text) {
  return "<rect x=\"" + SvgNum(x) + "\" y=\"" + SvgNum(y - 9) +
         "\" width=\"12\" height=\"10\" fill=\"" + colour + "\"/>\n" +
         SvgText(x + 16, y, "start", 12, text);
}

std::string Timeline(const BenchServeResult& r) {
  const std::vector<TimelineSample>& t = r.observations.timeline;
  std::string s = SvgText(kLeft, kTimeTop - 28, "start", 13,
                          "Server during the run (GET /metrics every " +
                              std::to_string(r.options.sample_interval.count()) + " ms)",
                          " font-weight=\"bold\"");
  double t_max = r.load.duration_s, req_max = 1;
  for (const TimelineSample& x : t) {
    t_max = std::max(t_max, x.t_s);
    req_max = std::max({req_max, x.running, x.waiting});
  }
  const double t_step = NiceStep(std::max(t_max, 0.1), 8);
  const double req_step = std::max(1.0, NiceStep(req_max, 4));
  Plot kv{kLeft,
          kTimeTop,
          kWidth - kLeft - kRight,
          kTimeH,
          t_step * std::max(1.0, std::ceil(t_max / t_step)),
          100};
  Plot req = kv;
  req.y_max = req_step * std::ceil(req_max / req_step);
  s += Axes(kv, t_step, 25, false, "%");
  s += RightLabels(req, req_step);
  s += SvgText(kv.x0 + kv.w / 2, kv.y0 + kv.h + 32, "middle", 11, "seconds");
  s += Swatch(kLeft, kTimeTop - 10, kKvColour, "KV cache usage (left axis)");
  s += Swatch(kLeft + 200, kTimeTop - 10, kRunColour, "running requests (right axis)");
  s += Swatch(kLeft + 420, kTimeTop - 10, kWaitColour, "waiting requests (right axis)");
  if (t.empty()) {
    return s + SvgText(kv.x0 + kv.w / 2, kv.y0 + kv.h / 2, "middle", 13,
                       "no /metrics samples (the server exports no kv_cache_usage_perc)");
  }
  std::vector<std::pair<double, double>> usage, running, waiting;
  std::string area = "<polygon fill=\"" + std::string(kKvFill) + "\" points=\"" +
                     SvgNum(kv.X(t.front().t_s)) + "," + SvgNum(kv.Y(0)) + " ";
  for (const TimelineSample& x : t) {
    usage.emplace_back(kv.X(x.t_s), kv.Y(x.kv_usage * 100));
    running.emplace_back(req.X(x.t_s), req.Y(x.running));
    waiting.emplace_back(req.X(x.t_s), req.Y(x.waiting));
    area += SvgNum(kv.X(x.t_s)) + "," + SvgNum(kv.Y(x.kv_usage * 100)) + " ";
  }
  area += SvgNum(kv.X(t.back().t_s)) + "," + SvgNum(kv.Y(0)) + "\"/>\n";
  return s + area + Polyline(usage, kKvColour, 1.5) +
         Polyline(waiting, kWaitColour, 1.5, " stroke-dasharray=\"4 3\"") +
         Polyline(running, kRunColour, 1.5);
}

// One CDF panel of `values` (seconds), drawn in milliseconds.
std::string Cdf(double x0, double w, const std::string& title, std::vector<double> values) {
  std::string s = SvgText(x0, kCdfTop - 14, "start", 13, title, " font-weight=\"bold\"");
  const Distribution d = Distribute(values, 1000);
  if (d.count == 0) {
    return s + SvgText(x0 + w / 2, kCdfTop + kCdfH / 2, "middle", 13, "no values");
  }
  for (double& v : values) v *= 1000;
  std::sort(values.begin(), values.end());
  const double x_end = std::max(values.back() <= 1.5 * d.p99 ? values.back() : 1.15 * d.p99, 1e-3);
  const double x_step = NiceStep(x_end, 5);
  const Plot p{x0, kCdfTop, w, kCdfH, x_step * std::ceil(x_end / x_step), 100};
  s += Axes(p, x_step, 25, false, "%");
  s += SvgText(p.x0 + p.w / 2, p.y0 + p.h + 32, "middle", 11, "milliseconds");
  std::vector<std::pair<double, double>> pts;
  for (int k = 0; k <= kCdfPoints; ++k) {
    const double q = 100.0 * k / kCdfPoints;
    pts.emplace_back(p.X(Percentile(values, q)), p.Y(q));
  }
  s += Polyline(pts, kCdfColour, 2);
  const std::pair<const char*, double> marks[] = {{"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}};
  double label_y = p.y0 + 12;  // Staggered, so close percentiles' labels do not overlap.
  for (const auto& [name, v] : marks) {
    s += SvgLine(p.X(v), p.y0, p.X(v), p.y0 + p.h, "#111", " stroke-dasharray=\"3 3\"");
    s += SvgText(p.X(v) - 3, label_y, "end", 10, std::string(name) + " " + MsLabel(v));
    label_y += 13;
  }
  return s;
}

}  // namespace

std::string FormatBenchSvg(const BenchServeResult& r) {
  const BenchSummary& sm = r.summary;
  std::string s = SvgOpen(kWidth, kHeight);
  s += SvgText(kWidth / 2, 22, "middle", 15,
               "kvengine bench-serve: " + std::string(KvWorkloadName(r.options.workload)) + " on " +
                   r.server.model,
               " font-weight=\"bold\"");
  s += SvgText(
      kWidth / 2, 42, "middle", 12,
      fmt::format("{} of {} requests ok, rate {}, concurrency {}: {:.2f} req/s, {:.1f} "
                  "output tok/s, prefix hit {}",
                  sm.completed, sm.completed + sm.failed, RateText(r.options.load.request_rate),
                  r.options.load.max_concurrency > 0
                      ? std::to_string(r.options.load.max_concurrency)
                      : std::string("none"),
                  sm.request_throughput, sm.output_throughput,
                  sm.prefix_cache_hit_rate ? fmt::format("{:.1f}%", *sm.prefix_cache_hit_rate * 100)
                                           : std::string("n/a")));
  s += Timeline(r);
  std::vector<double> ttft, itl;
  for (const RequestRecord& rec : r.load.records) {
    if (!rec.ok) continue;
    ttft.push_back(rec.Ttft());
    rec.AppendItls(&itl);
  }
  const double panel_w = (kWidth - kLeft - kRight - kCdfGap) / 2;
  s += Cdf(kLeft, panel_w, "TTFT: share of requests within x", std::move(ttft));
  s += Cdf(kLeft + panel_w + kCdfGap, panel_w, "ITL: share of token gaps within x", std::move(itl));
  return s + "</svg>\n";
}

std::string FormatBenchHtml(const BenchServeResult& r) {
  std::string h =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kvengine bench-serve</title>\n"
      "<style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse;"
      "margin-bottom:24px}td{padding:2px 12px;border-bottom:1px solid #eee}"
      "th{text-align:left;padding:10px 12px 2px;color:#555}td.v{text-align:right;"
      "font-variant-numeric:tabular-nums}</style></head>\n<body>\n"
      "<h1>kvengine bench-serve</h1>\n<table>\n";
  for (const ReportLine& line : ReportLines(r)) {
    h += line.label.empty() ? "<tr><th colspan=\"2\">" + XmlEscape(line.value) + "</th></tr>\n"
                            : "<tr><td>" + XmlEscape(line.label) + "</td><td class=\"v\">" +
                                  XmlEscape(line.value) + "</td></tr>\n";
  }
  h += "</table>\n";
  for (const auto& [message, count] : r.summary.errors) {
    h += "<p>failed x" + std::to_string(count) + ": " + XmlEscape(message) + "</p>\n";
  }
  return h + FormatBenchSvg(r) + "</body></html>\n";
}

}  // namespace kvengine::loadgen
