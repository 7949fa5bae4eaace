// FormatDecodeBenchSvg: the decode benchmark as a self-contained SVG bar chart. Up to three
// panels side by side, one bar per KV dtype in each group:
//   * decode tokens/s of one sequence, one group per KV depth;
//   * batched decode tokens/s (all sequences together), one group per batch size;
//   * prefill tokens/s, one group.
// The value is written on each bar; its tooltip adds the step time, the bytes a step reads and
// their fraction of the read bandwidth measured in the same run.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "base/size_parse.h"
#include "report/svg.h"
#include "report/perf_reports.h"

namespace kvengine {
// The chart's layout and helpers have names of their own (a unity build may compile this file
// beside the other benchmarks' charts).
namespace decode_chart {
namespace {

constexpr double kPanelH = 250;
constexpr double kGroupW = 100;  // Per group of bars.
constexpr double kMinPanelW = 250;
constexpr double kLeft = 56;
constexpr double kRight = 18;
constexpr double kTop = 130;  // Title, subtitle, legend and panel captions.
constexpr double kBottom = 40;
constexpr int kTicks = 5;
constexpr const char* kPalette[] = {"#1f5fa8", "#4c9a4c", "#d98b2b", "#9a4c9a",
                                    "#6fa3dc", "#9a9a9a", "#c44e52"};

struct Group {
  std::string label;
  std::vector<const DecodeBenchRow*> rows;  // Per dtype of the run (nullptr: none).
};

struct Panel {
  std::string caption;
  std::vector<Group> groups;
  std::function<double(const DecodeBenchRow&)> value;
};

double PanelWidth(const Panel& p, size_t dtypes) {
  return std::max(
      kMinPanelW,
      kLeft + kRight + double(p.groups.size()) * std::max(kGroupW, 22.0 * double(dtypes)));
}

std::string DrawPanel(const Panel& p, const std::vector<KvDtype>& dtypes, double x_left) {
  double max_value = 0;
  for (const Group& g : p.groups) {
    for (const DecodeBenchRow* row : g.rows) {
      if (row != nullptr) max_value = std::max(max_value, p.value(*row));
    }
  }
  const double step = NiceStep(std::max(max_value, 1.0), kTicks);
  const double y_max = step * kTicks;
  const double x0 = x_left + kLeft;
  const double plot_w = PanelWidth(p, dtypes.size()) - kLeft - kRight;
  const double base_y = kTop + kPanelH;
  auto y_of = [&](double v) { return base_y - kPanelH * v / y_max; };
  std::string s =
      SvgText(x0 + plot_w / 2, kTop - 14, "middle", 13, p.caption, " font-weight=\"bold\"");
  const double mid = kTop + kPanelH / 2;
  s += SvgText(x_left + 16, mid, "middle", 11, "tokens/s",
               " transform=\"rotate(-90 " + SvgNum(x_left + 16) + " " + SvgNum(mid) + ")\"");
  for (int t = 0; t <= kTicks; ++t) {
    const double v = step * t;
    s += SvgLine(x0, y_of(v), x0 + plot_w, y_of(v), t == 0 ? "#333" : "#e2e2e2");
    s += SvgText(x0 - 6, y_of(v) + 4, "end", 11, fmt::format("{:g}", v));
  }
  const double slot_w = plot_w / double(std::max<size_t>(1, p.groups.size()));
  const double bar_w = slot_w * 0.8 / double(std::max<size_t>(1, dtypes.size()));
  for (size_t g = 0; g < p.groups.size(); ++g) {
    s += SvgText(x0 + slot_w * (double(g) + 0.5), base_y + 18, "middle", 12, p.groups[g].label);
    for (size_t d = 0; d < dtypes.size(); ++d) {
      const DecodeBenchRow* row = p.groups[g].rows[d];
      if (row == nullptr) continue;
      const double v = p.value(*row);
      const double x = x0 + slot_w * double(g) + slot_w * 0.1 + bar_w * double(d);
      const std::string tip = fmt::format(
          "{} KV, depth {}, batch {}: {:.1f} tokens/s; step {:.2f} ms reads {:.1f} MB of weights "
          "and {:.1f} MB of KV, {:.2f} of the read bandwidth",
          KvDtypeName(row->kv_dtype), row->depth, row->batch, v, row->step_ms,
          double(row->weight_bytes_per_step) / 1e6, double(row->kv_bytes_per_step) / 1e6,
          row->fraction_of_read_bw);
      s += SvgRect(x + 1, y_of(v), bar_w - 2, base_y - y_of(v), kPalette[d % std::size(kPalette)],
                   tip);
      s += SvgText(x + bar_w / 2, y_of(v) - 3, "middle", 9, fmt::format("{:.1f}", v));
    }
  }
  return s;
}

const DecodeBenchRow* Find(const DecodeBenchResult& r, KvDtype d,
                           const std::function<bool(const DecodeBenchRow&)>& match) {
  for (const DecodeBenchRow& row : r.rows) {
    if (row.kv_dtype == d && match(row)) return &row;
  }
  return nullptr;
}

}  // namespace

std::string Format(const DecodeBenchResult& r) {
  const DecodeBenchOptions& o = r.options;
  const std::vector<KvDtype>& dtypes = o.kv_dtypes;
  std::vector<Panel> panels;
  auto decode = [](const DecodeBenchRow& row) { return row.decode_tokens_per_s; };
  if (!o.depths.empty()) {
    Panel p{"Decode, one sequence", {}, decode};
    for (int64_t depth : o.depths) {
      Group g{"depth " + FormatTokenCount(depth), {}};
      for (KvDtype d : dtypes) {
        g.rows.push_back(Find(
            r, d, [&](const DecodeBenchRow& row) { return row.batch == 1 && row.depth == depth; }));
      }
      p.groups.push_back(g);
    }
    panels.push_back(p);
  }
  if (!o.batches.empty()) {
    Panel p{"Batched decode (all sequences), depth " + FormatTokenCount(o.batch_depth), {}, decode};
    for (int batch : o.batches) {
      Group g{fmt::format("{} sequence{}", batch, batch == 1 ? "" : "s"), {}};
      for (KvDtype d : dtypes) {
        // The batched rows follow the depth rows (a batch of 1 at the batch depth may be either).
        const DecodeBenchRow* found = nullptr;
        for (const DecodeBenchRow& row : r.rows) {
          if (row.kv_dtype == d && row.batch == batch && row.depth == o.batch_depth) found = &row;
        }
        g.rows.push_back(found);
      }
      p.groups.push_back(g);
    }
    panels.push_back(p);
  }
  if (o.prompt_tokens > 0) {
    Panel p{fmt::format("Prefill, {}-token prompt", o.prompt_tokens),
            {},
            [](const DecodeBenchRow& row) { return row.prefill_tokens_per_s; }};
    Group g{"from an empty cache", {}};
    for (KvDtype d : dtypes) {
      g.rows.push_back(
          Find(r, d, [](const DecodeBenchRow& row) { return row.prefill_tokens > 0; }));
    }
    p.groups.push_back(g);
    panels.push_back(p);
  }

  double width = 0;
  for (const Panel& p : panels) width += PanelWidth(p, dtypes.size());
  width = std::max(width, 640.0);
  std::string s = SvgOpen(width, kTop + kPanelH + kBottom);
  s += SvgText(width / 2, 22, "middle", 15, "kvengine bench decode: " + r.model,
               " font-weight=\"bold\"");
  s += SvgText(width / 2, 40, "middle", 12,
               fmt::format("{} threads; read bandwidth this run {:.1f} GB/s; KV at depth filled "
                           "with random values",
                           r.threads, r.read_bw_gb_per_s));
  double lx = kLeft;
  for (size_t d = 0; d < dtypes.size(); ++d) {
    s += SvgRect(lx, 56, 12, 12, kPalette[d % std::size(kPalette)]);
    const std::string name = std::string(KvDtypeName(dtypes[d])) + " KV";
    s += SvgText(lx + 16, 66.5, "start", 12, name);
    lx += 30 + 7.5 * double(name.size());
  }
  double x = 0;
  for (const Panel& p : panels) {
    s += DrawPanel(p, dtypes, x);
    x += PanelWidth(p, dtypes.size());
  }
  s += "</svg>\n";
  return s;
}

}  // namespace decode_chart

std::string FormatDecodeBenchSvg(const DecodeBenchResult& r) { return decode_chart::Format(r); }

}  // namespace kvengine
