// FormatAttentionBenchSvg: the attention benchmark as a self-contained SVG chart in two sections,
// each a grid of panels (rows: layouts, columns: thread counts) with one group of bars per context
// and one bar per KV dtype:
//   1. KV bytes read per second as a fraction of the read bandwidth measured in the same run, the
//      fraction on top, a dashed line at 0.75 (the goal for f16);
//   2. (with f16 and another dtype) each other dtype's tokens/s over f16's, with a tick at f16's
//      row bytes over the dtype's: the speed-up attention bound by memory would show.
// Each bar's tooltip has its tokens/s and KV GB/s. Rows at the first setting only (a --prefetch
// or --item-heads comparison is in the text report).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/size_parse.h"
#include "report/svg.h"
#include "report/perf_reports.h"

namespace kvengine {
// The chart's layout and helpers have names of their own (a unity build may compile this file
// beside the other benchmarks' charts).
namespace attention_chart {
namespace {

constexpr double kPanelW = 470;
constexpr double kPanelH = 250;
constexpr double kLeft = 56;  // Y-axis labels of a panel.
constexpr double kRight = 14;
constexpr double kTop = 96;          // Title, subtitle and legend.
constexpr double kPanelTop = 26;     // A panel's caption.
constexpr double kPanelBottom = 34;  // Context labels.
constexpr double kGoal = 0.75;
constexpr int kTicks = 5;
// One colour per dtype, in the order of the run's --kv-dtypes.
constexpr const char* kPalette[] = {"#1f5fa8", "#6fa3dc", "#d98b2b", "#4c9a4c",
                                    "#9a4c9a", "#9a9a9a", "#c44e52"};

using Key = std::tuple<KvDtype, int64_t, int, KvLayout>;

// One section of the chart: a grid of panels (rows: layouts, columns: thread counts), each a
// group of bars per context with one bar per dtype of `dtypes`.
struct Section {
  std::string caption;  // Above the grid.
  std::string axis;     // Y-axis title.
  double y_max = 1;
  double step = 0.2;
  double goal = -1;  // A dashed line across every panel at this value (< 0: none).
  // The bar of a row (NaN: no bar) and an optional tick across it (NaN: none).
  std::function<double(const AttentionBenchRow&)> value;
  std::function<double(const AttentionBenchRow&)> tick;
  std::function<std::string(const AttentionBenchRow&)> label;
};

constexpr double kSectionCaption = 24;
double SectionHeight(size_t panel_rows) {
  return kSectionCaption + (kPanelH + kPanelTop + kPanelBottom) * double(panel_rows);
}

std::string DrawSection(const AttentionBenchResult& r,
                        const std::map<Key, const AttentionBenchRow*>& rows,
                        const std::vector<KvDtype>& dtypes, const Section& sec, double y0) {
  const AttentionBenchOptions& o = r.options;
  const size_t cols = std::max<size_t>(1, o.threads.size());
  const size_t panel_rows = std::max<size_t>(1, o.layouts.size());
  std::string s = SvgText(kPanelW * double(cols) / 2, y0 + 16, "middle", 14, sec.caption,
                          " font-weight=\"bold\"");
  for (size_t pr = 0; pr < panel_rows; ++pr) {
    for (size_t pc = 0; pc < cols; ++pc) {
      const KvLayout layout = o.layouts.empty() ? KvLayout::kPaged : o.layouts[pr];
      const int threads = o.threads.empty() ? 1 : o.threads[pc];
      const double x0 = kPanelW * double(pc) + kLeft;
      const double plot_w = kPanelW - kLeft - kRight;
      const double top =
          y0 + kSectionCaption + (kPanelH + kPanelTop + kPanelBottom) * double(pr) + kPanelTop;
      const double base_y = top + kPanelH;
      auto y_of = [&](double v) { return base_y - kPanelH * std::min(v, sec.y_max) / sec.y_max; };
      s += SvgText(
          x0 + plot_w / 2, top - 10, "middle", 13,
          fmt::format("{}, {} thread{}", KvLayoutName(layout), threads, threads == 1 ? "" : "s"));
      for (int t = 0; t * sec.step <= sec.y_max + 1e-9; ++t) {
        const double v = sec.step * t;
        s += SvgLine(x0, y_of(v), x0 + plot_w, y_of(v), t == 0 ? "#333" : "#e2e2e2");
        s += SvgText(x0 - 6, y_of(v) + 4, "end", 11, fmt::format("{:.3g}", v));
      }
      if (pc == 0) {
        const double mid = top + kPanelH / 2;
        s += SvgText(14, mid, "middle", 11, sec.axis,
                     " transform=\"rotate(-90 14 " + SvgNum(mid) + ")\"");
      }
      const double slot_w = plot_w / double(std::max<size_t>(1, o.contexts.size()));
      const double bar_w = slot_w * 0.84 / double(std::max<size_t>(1, dtypes.size()));
      for (size_t c = 0; c < o.contexts.size(); ++c) {
        const int64_t context = o.contexts[c];
        s += SvgText(x0 + slot_w * (double(c) + 0.5), base_y + 18, "middle", 12,
                     FormatTokenCount(context) + " tokens");
        for (size_t d = 0; d < dtypes.size(); ++d) {
          auto it = rows.find({dtypes[d], context, threads, layout});
          if (it == rows.end()) continue;
          const AttentionBenchRow& row = *it->second;
          const double v = sec.value(row);
          if (std::isnan(v)) continue;
          const double x = x0 + slot_w * double(c) + slot_w * 0.08 + bar_w * double(d);
          const double y = y_of(v);
          const size_t colour =
              size_t(std::find(o.kv_dtypes.begin(), o.kv_dtypes.end(), row.kv_dtype) -
                     o.kv_dtypes.begin());
          const std::string tip = fmt::format(
              "{}, {} tokens, {}, {} thread{}: {}; {:.1f} tokens/s, KV {:.2f} GB/s = {:.2f} of the "
              "read bandwidth",
              KvDtypeName(row.kv_dtype), context, KvLayoutName(layout), threads,
              threads == 1 ? "" : "s", sec.label(row), row.tokens_per_s, row.kv_gb_per_s,
              row.fraction_of_read_bw);
          s +=
              SvgRect(x + 1, y, bar_w - 2, base_y - y, kPalette[colour % std::size(kPalette)], tip);
          s += SvgText(x + bar_w / 2, y - 3, "middle", 8, sec.label(row));
          if (sec.tick) {
            const double k = sec.tick(row);
            if (!std::isnan(k)) {
              s += SvgLine(x + 1, y_of(k), x + bar_w - 1, y_of(k), "#111", " stroke-width=\"2\"");
            }
          }
        }
      }
      if (sec.goal >= 0 && sec.goal <= sec.y_max) {
        s += SvgLine(x0, y_of(sec.goal), x0 + plot_w, y_of(sec.goal), "#c0392b",
                     " stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
      }
    }
  }
  return s;
}

}  // namespace

std::string Format(const AttentionBenchResult& r) {
  const AttentionBenchOptions& o = r.options;
  const AttentionBenchSetting first =
      r.settings.empty() ? AttentionBenchSetting{DefaultKvPrefetchLevel(), 0} : r.settings[0];
  std::map<Key, const AttentionBenchRow*> rows;
  double max_fraction = 1.0, max_speedup = 1.0;
  for (const AttentionBenchRow& row : r.rows) {
    if (row.setting() == first) rows[{row.kv_dtype, row.context, row.threads, row.layout}] = &row;
  }
  // tokens/s over f16 in the same (context, threads, layout); NaN without an f16 row.
  auto over_f16 = [&rows](const AttentionBenchRow& row) {
    auto f16 = rows.find({KvDtype::kF16, row.context, row.threads, row.layout});
    return f16 == rows.end() ? std::nan("") : row.tokens_per_s / f16->second->tokens_per_s;
  };
  auto bytes_ratio = [&](const AttentionBenchRow& row) {
    return KvBytesRatioOverF16(row.kv_dtype, o.head_dim);
  };
  std::vector<KvDtype> quantized;
  for (KvDtype d : o.kv_dtypes) {
    if (d != KvDtype::kF16) quantized.push_back(d);
  }
  for (const auto& [key, row] : rows) {
    max_fraction = std::max(max_fraction, row->fraction_of_read_bw);
    if (std::get<0>(key) == KvDtype::kF16) continue;
    const double x = over_f16(*row);
    if (!std::isnan(x)) max_speedup = std::max({max_speedup, x, bytes_ratio(*row)});
  }
  const size_t cols = std::max<size_t>(1, o.threads.size());
  const size_t panel_rows = std::max<size_t>(1, o.layouts.size());
  const bool with_f16 =
      std::find(o.kv_dtypes.begin(), o.kv_dtypes.end(), KvDtype::kF16) != o.kv_dtypes.end();
  const bool speedups = with_f16 && !quantized.empty();
  const double width = kPanelW * double(cols);
  const double height = kTop + SectionHeight(panel_rows) * (speedups ? 2 : 1);

  std::string s = SvgOpen(width, height);
  s += SvgText(width / 2, 22, "middle", 15,
               "kvengine bench attention: decode attention over paged KV", " font-weight=\"bold\"");
  std::string sub = fmt::format(
      "{} query heads / {} KV heads x {}, paged blocks of {} tokens; read bandwidth this run:",
      o.n_heads, o.num_kv_heads, o.head_dim, o.block_size);
  for (size_t i = 0; i < r.read_bw_gb_per_s.size(); ++i) {
    sub += fmt::format("{} {} thread{} {:.1f} GB/s", i ? "," : "", r.read_bw_gb_per_s[i].first,
                       r.read_bw_gb_per_s[i].first == 1 ? "" : "s", r.read_bw_gb_per_s[i].second);
  }
  s += SvgText(width / 2, 40, "middle", 12, sub);

  // Legend: one swatch per dtype, the goal line, the memory-bound tick.
  double lx = kLeft;
  for (size_t d = 0; d < o.kv_dtypes.size(); ++d) {
    s += SvgRect(lx, 56, 12, 12, kPalette[d % std::size(kPalette)]);
    const std::string name(KvDtypeName(o.kv_dtypes[d]));
    s += SvgText(lx + 16, 66.5, "start", 12, name);
    lx += 30 + 7.5 * double(name.size());
  }
  s += SvgLine(lx, 62, lx + 18, 62, "#c0392b", " stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
  s += SvgText(lx + 22, 66.5, "start", 12, "0.75 (the goal for f16)");
  if (speedups) {
    lx += 190;
    s += SvgLine(lx, 62, lx + 14, 62, "#111", " stroke-width=\"2\"");
    s += SvgText(lx + 18, 66.5, "start", 12, "f16's row bytes over the dtype's");
  }

  Section fraction;
  fraction.caption = "KV bytes read per second, as a fraction of the read bandwidth";
  fraction.axis = "of the read bandwidth";
  fraction.step = NiceStep(max_fraction, kTicks);
  fraction.y_max = fraction.step * kTicks;
  fraction.goal = kGoal;
  fraction.value = [](const AttentionBenchRow& row) { return row.fraction_of_read_bw; };
  fraction.label = [](const AttentionBenchRow& row) {
    return fmt::format("{:.2f}", row.fraction_of_read_bw);
  };
  s += DrawSection(r, rows, o.kv_dtypes, fraction, kTop);
  if (speedups) {
    Section speed;
    speed.caption =
        "tokens/s over f16's (1 = as fast); the tick: the ratio if attention were bound by memory";
    speed.axis = "tokens/s over f16";
    speed.step = NiceStep(max_speedup, kTicks);
    speed.y_max = speed.step * kTicks;
    speed.goal = -1;
    speed.value = over_f16;
    speed.tick = bytes_ratio;
    speed.label = [over_f16](const AttentionBenchRow& row) {
      return fmt::format("{:.2f}x", over_f16(row));
    };
    s += DrawSection(r, rows, quantized, speed, kTop + SectionHeight(panel_rows));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace attention_chart

std::string FormatAttentionBenchSvg(const AttentionBenchResult& r) {
  return attention_chart::Format(r);
}

}  // namespace kvengine
