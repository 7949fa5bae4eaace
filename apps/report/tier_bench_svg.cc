// FormatTierBenchSvg: the tier benchmark as a self-contained SVG chart of two panels:
//   * time to first token of the repeated prompt per row (recompute, pool, ram, disk, redis), log
//     scale, the milliseconds and the speed-up over recompute on each bar;
//   * per tier row (ram, disk, redis), the read rate the tier measured beside the raw bandwidth of
//     the same medium measured in the same run (GB/s, log scale: RAM and Redis differ by 100x).
// Skipped rows are named with their reason instead of a bar; each bar's tooltip has the row's
// bytes, blocks and note.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report/svg.h"
#include "report/perf_reports.h"

namespace kvengine {
// The chart's layout and helpers have names of their own (a unity build may compile this file
// beside the other benchmarks' charts).
namespace tier_chart {
namespace {

constexpr double kWidth = 960;
constexpr double kPanelH = 250;
constexpr double kTop = 104;
constexpr double kBottom = 44;
constexpr double kLeft = 62;
constexpr double kGap = 40;  // Between the panels.
constexpr double kRight = 24;
constexpr const char* kRowColour[] = {"#9a9a9a", "#1f5fa8", "#4c9a4c", "#d98b2b", "#c44e52"};
constexpr const char* kRawColour = "#d0d0d0";

std::string RowTip(const TierBenchRow& row) {
  std::string tip = fmt::format("{}: TTFT {:.1f} ms (median of {}), {:.1f}x recompute",
                                TierScenarioName(row.scenario), row.ttft_s * 1e3,
                                row.ttft_runs_s.size(), row.speedup_vs_recompute);
  if (row.bytes > 0) {
    tip += fmt::format("; read {} blocks, {:.1f} MB", row.blocks, double(row.bytes) / 1e6);
  }
  if (!row.note.empty()) tip += "; " + row.note;
  return tip;
}

// A log10 axis over whole decades covering [lo, hi] (values > 0) on a panel's height.
struct LogAxis {
  double first = 0;    // log10 of the bottom line.
  double decades = 1;  // Lines above it.
  LogAxis(double lo, double hi) {
    if (!(hi > 0) || !(lo > 0)) lo = hi = 1;
    first = std::floor(std::log10(lo));
    decades = std::max(1.0, std::ceil(std::log10(hi)) - first);
  }
  double Y(double v, double base_y) const {
    const double l = std::log10(std::max(v, std::pow(10.0, first)));
    return base_y - kPanelH * (l - first) / decades;
  }
  // Grid lines and labels, one per decade.
  std::string Draw(double x0, double width, double base_y) const {
    std::string s;
    for (int d = 0; d <= int(decades); ++d) {
      const double v = std::pow(10.0, first + d);
      s += SvgLine(x0, Y(v, base_y), x0 + width, Y(v, base_y), d == 0 ? "#333" : "#e2e2e2");
      s += SvgText(x0 - 6, Y(v, base_y) + 4, "end", 11, fmt::format("{:g}", v));
    }
    return s;
  }
};

}  // namespace

std::string Format(const TierBenchResult& r) {
  const double panel_w = (kWidth - 2 * kLeft - kGap - kRight) / 2;
  const double base_y = kTop + kPanelH;
  std::string s = SvgOpen(kWidth, kTop + kPanelH + kBottom);
  s += SvgText(kWidth / 2, 22, "middle", 15,
               "kvengine bench tiers: time to first token of a repeated prompt, by where its KV is",
               " font-weight=\"bold\"");
  s +=
      SvgText(kWidth / 2, 40, "middle", 12,
              fmt::format("{}, {}-token prompt ({} reusable blocks of {} tokens, {:.1f} MB of KV), "
                          "{} threads",
                          r.model, r.options.prompt_tokens, r.prefix_blocks, r.block_size,
                          double(r.kv_bytes_per_token) * double(r.prefix_blocks) *
                              double(r.block_size) / 1e6,
                          r.threads));

  // Panel 1: TTFT per row (log scale: recompute is 100x the rest).
  double min_ms = 0, max_ms = 0;
  for (const TierBenchRow& row : r.rows) {
    if (row.skipped || !(row.ttft_s > 0)) continue;
    min_ms = min_ms == 0 ? row.ttft_s * 1e3 : std::min(min_ms, row.ttft_s * 1e3);
    max_ms = std::max(max_ms, row.ttft_s * 1e3);
  }
  const LogAxis ms_axis(min_ms, max_ms);
  auto y_ms = [&](double ms) { return ms_axis.Y(ms, base_y); };
  double x0 = kLeft;
  s += SvgText(x0 + panel_w / 2, kTop - 16, "middle", 13, "time to first token (ms, log scale)",
               " font-weight=\"bold\"");
  s += ms_axis.Draw(x0, panel_w, base_y);
  const double slot = panel_w / double(std::max<size_t>(1, r.rows.size()));
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const TierBenchRow& row = r.rows[i];
    const double cx = x0 + slot * (double(i) + 0.5);
    s += SvgText(cx, base_y + 18, "middle", 12, TierScenarioName(row.scenario));
    if (row.skipped) {
      s += SvgText(cx, base_y - 8, "middle", 10, "skipped", " fill=\"#777\"");
      continue;
    }
    const double ms = row.ttft_s * 1e3;
    s += SvgRect(cx - slot * 0.35, y_ms(ms), slot * 0.7, base_y - y_ms(ms),
                 kRowColour[size_t(row.scenario) % std::size(kRowColour)], RowTip(row));
    const std::string label = row.scenario == TierScenario::kRecompute
                                  ? fmt::format("{:.1f}", ms)
                                  : fmt::format("{:.1f} ({:.0f}x)", ms, row.speedup_vs_recompute);
    s += SvgText(cx, y_ms(ms) - 4, "middle", 10, label);
  }

  // Panel 2: the tier's measured read rate beside the raw medium, log scale.
  x0 = kLeft * 2 + panel_w + kGap;
  s += SvgText(x0 + panel_w / 2, kTop - 16, "middle", 13,
               "read GB/s (log scale): the tier's own | the raw medium", " font-weight=\"bold\"");
  double lo = 1e9, hi = 0;
  std::vector<const TierBenchRow*> tiers;
  for (const TierBenchRow& row : r.rows) {
    if (row.scenario == TierScenario::kRecompute || row.scenario == TierScenario::kPool) continue;
    tiers.push_back(&row);
    for (double v : {row.tier_gb_per_s, row.raw.gb_per_s}) {
      if (!row.skipped && v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  const LogAxis gb_axis(lo, hi);
  auto y_gb = [&](double v) { return gb_axis.Y(v, base_y); };
  s += gb_axis.Draw(x0, panel_w, base_y);
  const double tslot = panel_w / double(std::max<size_t>(1, tiers.size()));
  for (size_t i = 0; i < tiers.size(); ++i) {
    const TierBenchRow& row = *tiers[i];
    const double cx = x0 + tslot * (double(i) + 0.5);
    s += SvgText(cx, base_y + 18, "middle", 12, TierScenarioName(row.scenario));
    if (row.skipped) {
      s += SvgText(cx, base_y - 8, "middle", 10, "skipped", " fill=\"#777\"");
      continue;
    }
    const double bw = tslot * 0.3;
    const double tier_y = y_gb(row.tier_gb_per_s), raw_y = y_gb(row.raw.gb_per_s);
    s += SvgRect(
        cx - bw, tier_y, bw - 2, base_y - tier_y,
        kRowColour[size_t(row.scenario) % std::size(kRowColour)],
        fmt::format("{}: the tier measured {:.2f} GB/s ({:.2f} of the raw medium)",
                    TierScenarioName(row.scenario), row.tier_gb_per_s, row.fraction_of_raw));
    s += SvgText(cx - bw / 2, tier_y - 4, "middle", 10, fmt::format("{:.2g}", row.tier_gb_per_s));
    s += SvgRect(cx + 2, raw_y, bw - 2, base_y - raw_y, kRawColour,
                 fmt::format("{}: raw {} of {} values of {} bytes, {:.2f} GB/s",
                             TierScenarioName(row.scenario), row.raw.method, row.raw.count,
                             row.raw.value_bytes, row.raw.gb_per_s));
    s += SvgText(cx + bw / 2, raw_y - 4, "middle", 10, fmt::format("{:.2g}", row.raw.gb_per_s));
  }
  s += SvgRect(x0, 58, 12, 12, kRawColour);
  s += SvgText(x0 + 16, 68.5, "start", 12, "raw medium, same values, this run");
  s += "</svg>\n";
  return s;
}

}  // namespace tier_chart

std::string FormatTierBenchSvg(const TierBenchResult& r) { return tier_chart::Format(r); }

}  // namespace kvengine
