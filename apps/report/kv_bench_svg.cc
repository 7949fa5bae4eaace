// FormatKvBenchSvg: a self-contained SVG bar chart of `kvengine bench kv` results — one group of
// bars per workload, one bar per policy, height = peak concurrent sequences, value on top, and a
// dark tick across each bar at the mean while requests waited (the sustained figure).
// No scripts, no external fonts or styles: it renders the same in a browser and in a README.
//
// Geometry (user units): a kWidth x kHeight canvas; the plot area is inset by the margins below;
// the y axis runs from 0 to a "nice" ceiling (1, 2 or 5 x 10^k per tick, 5 ticks).
#include <algorithm>
#include <string>
#include <vector>

#include "base/size_parse.h"
#include "report/svg.h"
#include "report/kv_bench_report.h"

namespace kvengine {

namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 420;
constexpr double kLeft = 64;  // Y-axis labels.
constexpr double kRight = 20;
constexpr double kTop = 86;     // Title and legend.
constexpr double kBottom = 48;  // Workload labels.
constexpr int kTicks = 5;
// One colour per policy, in order of first appearance (paged first: the darker blues).
constexpr const char* kPalette[] = {"#1f5fa8", "#6fa3dc", "#9a9a9a", "#d98b2b", "#4c9a4c"};

// Bar heights count sequences: the step is a whole number.
double CountStep(double max_value) {
  return std::max(1.0, NiceStep(std::max(max_value, 1.0), kTicks));
}

void AddUnique(const std::string& s, std::vector<std::string>* v) {
  if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

}  // namespace

std::string FormatKvBenchSvg(const std::vector<KvBenchRow>& rows, const KvBenchOptions& o) {
  std::vector<std::string> workloads;
  std::vector<std::string> policies;
  int64_t max_peak = 0;
  for (const KvBenchRow& r : rows) {
    AddUnique(r.workload, &workloads);
    AddUnique(r.policy, &policies);
    max_peak = std::max(max_peak, r.peak_concurrent_sequences);
  }
  const double step = CountStep(static_cast<double>(max_peak));
  const double y_max = step * kTicks;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  const double base_y = kTop + plot_h;
  auto y_of = [&](double v) { return base_y - plot_h * v / y_max; };

  std::string s;
  s += SvgOpen(kWidth, kHeight);
  s += SvgText(kWidth / 2, 22, "middle", 15, "Peak concurrent sequences per KV policy",
               " font-weight=\"bold\"");
  s += SvgText(kWidth / 2, 40, "middle", 12,
               o.model + ", " + KvBenchDtypeName(o) + " KV, budget " +
                   FormatBytes(o.kv_memory_bytes) + ", block " + std::to_string(o.block_size) +
                   ", max_model_len " + std::to_string(o.max_model_len));

  // Legend, one swatch per policy.
  double lx = kLeft;
  for (size_t p = 0; p < policies.size(); ++p) {
    const char* colour = kPalette[p % std::size(kPalette)];
    s += SvgRect(lx, 52, 12, 12, colour);
    s += SvgText(lx + 16, 62.5, "start", 12, policies[p]);
    lx += 28 + 7.5 * static_cast<double>(policies[p].size());
  }
  s += "<line x1=\"" + SvgNum(lx) + "\" y1=\"58\" x2=\"" + SvgNum(lx + 14) +
       "\" y2=\"58\" stroke=\"#111\" stroke-width=\"2\"/>\n";
  s += SvgText(lx + 18, 62.5, "start", 12, "mean while requests waited");

  // Grid lines and y-axis labels.
  for (int t = 0; t <= kTicks; ++t) {
    const double v = step * t;
    const double y = y_of(v);
    s += SvgLine(kLeft, y, kWidth - kRight, y, t == 0 ? "#333" : "#e2e2e2");
    s += SvgText(kLeft - 8, y + 4, "end", 11, std::to_string(static_cast<int64_t>(v)));
  }
  s += SvgText(16, kTop + plot_h / 2, "middle", 12, "sequences",
               " transform=\"rotate(-90 16 " + SvgNum(kTop + plot_h / 2) + ")\"");

  // Bars: each workload gets an equal slot; bars fill 80% of it.
  const double slot_w = workloads.empty() ? plot_w : plot_w / static_cast<double>(workloads.size());
  const double bar_w = policies.empty() ? 0 : slot_w * 0.8 / static_cast<double>(policies.size());
  for (size_t w = 0; w < workloads.size(); ++w) {
    const double x0 = kLeft + slot_w * static_cast<double>(w) + slot_w * 0.1;
    s += SvgText(kLeft + slot_w * (static_cast<double>(w) + 0.5), base_y + 22, "middle", 13,
                 workloads[w]);
    for (const KvBenchRow& r : rows) {
      if (r.workload != workloads[w]) continue;
      const size_t p = static_cast<size_t>(std::find(policies.begin(), policies.end(), r.policy) -
                                           policies.begin());
      const double v = static_cast<double>(r.peak_concurrent_sequences);
      const double x = x0 + bar_w * static_cast<double>(p);
      const double y = y_of(v);
      s +=
          SvgRect(x + 2, y, std::max(1.0, bar_w - 4), base_y - y, kPalette[p % std::size(kPalette)],
                  r.workload + " / " + r.policy + ": " +
                      std::to_string(r.peak_concurrent_sequences) + " sequences");
      s += SvgText(x + bar_w / 2, y - 4, "middle", 11, std::to_string(r.peak_concurrent_sequences));
      // The mean while requests waited, as a dark tick across the bar.
      const double ym = y_of(r.mean_concurrent_sequences);
      s += SvgLine(x + 2, ym, x + bar_w - 2, ym, "#111", " stroke-width=\"2\"");
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace kvengine
