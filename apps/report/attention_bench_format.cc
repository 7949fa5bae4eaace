// Text and JSON reports of the attention benchmark.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "report/perf_reports.h"

namespace kvengine {
namespace {

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", double(b) / double(1 << 20));
  return fmt::format("{:.1f} KiB", double(b) / 1024.0);
}

std::string ThreadsWord(int t) { return fmt::format("{} thread{}", t, t == 1 ? "" : "s"); }

// Rows by (dtype, context, threads, layout) at one setting.
using Key = std::tuple<KvDtype, int64_t, int, KvLayout>;
std::map<Key, const AttentionBenchRow*> Index(const AttentionBenchResult& r,
                                              const AttentionBenchSetting& setting) {
  std::map<Key, const AttentionBenchRow*> m;
  for (const AttentionBenchRow& row : r.rows) {
    if (row.setting() == setting) m[{row.kv_dtype, row.context, row.threads, row.layout}] = &row;
  }
  return m;
}

// " (prefetch into l1)" when the run compared settings, else nothing.
std::string SettingNote(const AttentionBenchResult& r, const AttentionBenchSetting& setting) {
  const std::string label = SettingLabel(r, setting);
  return label.empty() ? "" : " (" + label + ")";
}

// tokens/s with each later setting over the first, per dtype, context, layout and threads.
void AppendSettingRatios(const AttentionBenchResult& r, std::string* s) {
  const auto base = Index(r, r.settings[0]);
  for (size_t i = 1; i < r.settings.size(); ++i) {
    const auto other = Index(r, r.settings[i]);
    *s += fmt::format("\n{} / {} (tokens/s):\n", SettingLabel(r, r.settings[i]),
                      SettingLabel(r, r.settings[0]));
    *s += fmt::format("{:<9} {:>8} {:<10}", "kv_dtype", "context", "layout");
    for (int t : r.options.threads) *s += fmt::format(" {:>10}", ThreadsWord(t));
    *s += "\n";
    for (KvDtype d : r.options.kv_dtypes) {
      for (int64_t c : r.options.contexts) {
        for (KvLayout layout : r.options.layouts) {
          *s += fmt::format("{:<9} {:>8} {:<10}", KvDtypeName(d), c, KvLayoutName(layout));
          for (int t : r.options.threads) {
            auto a = base.find({d, c, t, layout});
            auto b = other.find({d, c, t, layout});
            *s +=
                a == base.end() || b == other.end()
                    ? fmt::format(" {:>10}", "-")
                    : fmt::format(" {:>10.2f}", b->second->tokens_per_s / a->second->tokens_per_s);
          }
          *s += "\n";
        }
      }
    }
  }
}

// The entry for `threads` of a per-thread-count vector (one entry per thread count, in
// read_bw_gb_per_s's order: the FMA peaks, the probe's runs), or T{} if absent.
template <class T>
T ForThreads(const AttentionBenchResult& r, const std::vector<T>& per_threads, int threads) {
  for (size_t i = 0; i < r.read_bw_gb_per_s.size() && i < per_threads.size(); ++i) {
    if (r.read_bw_gb_per_s[i].first == threads) return per_threads[i];
  }
  return T{};
}
double FmaPeakOf(const AttentionBenchResult& r, int threads) {
  return ForThreads(r, r.fma_peak_gmacs, threads);
}

// Per dtype and thread count (the same for every context and layout): the KV GB/s at which the
// kernel's f32 multiply-adds would run at the measured peak, and its fraction of the read bw.
void AppendFmaCeiling(const AttentionBenchResult& r, std::string* s) {
  std::map<std::pair<KvDtype, int>, const AttentionBenchRow*> first;
  for (const AttentionBenchRow& row : r.rows) first.try_emplace({row.kv_dtype, row.threads}, &row);
  *s += fmt::format(
      "\ncompute ceiling: KV GB/s if each KV element's {} multiply-adds (one per query head of "
      "its KV head) ran at the f32 peak\n(int8 and int4 on VNNI and fp8 on AVX512_BF16 do two or "
      "four per lane and may exceed it):\n",
      r.options.n_heads / r.options.num_kv_heads);
  *s += fmt::format("{:<9}", "kv_dtype");
  for (int t : r.options.threads) *s += fmt::format(" {:>21}", ThreadsWord(t));
  *s += "\n";
  // One line: `label`, then per thread count dtype d's `ceiling` and its fraction of the bw.
  const auto line = [&](KvDtype d, std::string_view label, double AttentionBenchRow::*ceiling) {
    *s += fmt::format("{:<9}", label);
    for (int t : r.options.threads) {
      auto it = first.find({d, t});
      *s += it == first.end() ? fmt::format(" {:>21}", "-")
                              : fmt::format(" {:>8.1f} ({:.2f} of bw)", it->second->*ceiling,
                                            it->second->*ceiling / it->second->read_bw_gb_per_s);
    }
    *s += "\n";
  };
  for (KvDtype d : r.options.kv_dtypes) {
    line(d, KvDtypeName(d), &AttentionBenchRow::fma_ceiling_gb_per_s);
    if (d == KvDtype::kF16) line(d, "f16 (cvt)", &AttentionBenchRow::f16_fma_ceiling_gb_per_s);
  }
  *s +=
      "(f16 (cvt): at the rate of multiply-adds fed by one f16 conversion per 4, measured in "
      "this run)\n";
}

void AppendPagedOverContiguous(const AttentionBenchResult& r, const AttentionBenchSetting& setting,
                               std::string* s) {
  const auto rows = Index(r, setting);
  std::string body;
  for (KvDtype d : r.options.kv_dtypes) {
    for (int64_t c : r.options.contexts) {
      std::string line = fmt::format("{:<9} {:>8}", KvDtypeName(d), c);
      bool any = false;
      for (int t : r.options.threads) {
        auto p = rows.find({d, c, t, KvLayout::kPaged});
        auto q = rows.find({d, c, t, KvLayout::kContiguous});
        if (p == rows.end() || q == rows.end()) {
          line += fmt::format(" {:>10}", "-");
          continue;
        }
        line += fmt::format(" {:>10.2f}", p->second->tokens_per_s / q->second->tokens_per_s);
        any = true;
      }
      if (any) body += line + "\n";
    }
  }
  if (body.empty()) return;
  *s += fmt::format("\npaged / contiguous (tokens/s; 1.00 = paging costs nothing){}:\n",
                    SettingNote(r, setting));
  *s += fmt::format("{:<9} {:>8}", "kv_dtype", "context");
  for (int t : r.options.threads) *s += fmt::format(" {:>10}", ThreadsWord(t));
  *s += "\n" + body;
}

void AppendOverF16(const AttentionBenchResult& r, const AttentionBenchSetting& setting,
                   std::string* s) {
  const auto rows = Index(r, setting);
  std::vector<KvDtype> others;
  for (KvDtype d : r.options.kv_dtypes) {
    if (d != KvDtype::kF16) others.push_back(d);
  }
  if (others.empty()) return;
  for (KvLayout layout : r.options.layouts) {
    std::string body;
    for (int64_t c : r.options.contexts) {
      for (int t : r.options.threads) {
        auto f16 = rows.find({KvDtype::kF16, c, t, layout});
        if (f16 == rows.end()) continue;
        body += fmt::format("{:>8} {:>8}", c, t);
        for (KvDtype d : others) {
          auto x = rows.find({d, c, t, layout});
          body +=
              x == rows.end()
                  ? fmt::format(" {:>9}", "-")
                  : fmt::format(" {:>8.2f}x", x->second->tokens_per_s / f16->second->tokens_per_s);
        }
        body += "\n";
      }
    }
    if (body.empty()) continue;
    *s += fmt::format(
        "\ntokens/s over f16 ({}){}; memory-bound attention would reach the KV bytes "
        "ratio:\n",
        KvLayoutName(layout), SettingNote(r, setting));
    *s += fmt::format("{:>8} {:>8}", "context", "threads");
    for (KvDtype d : others) *s += fmt::format(" {:>9}", KvDtypeName(d));
    *s += fmt::format("\n{:>17}", "KV bytes ratio");
    for (KvDtype d : others) {
      *s += fmt::format(" {:>8.2f}x", KvBytesRatioOverF16(d, r.options.head_dim));
    }
    *s += "\n" + body;
  }
}

// "kernel AVX3_VNNI_BF16: int16 dot products for int8; bf16 dot products for fp8_e4m3;
// int8+int16 dot products for int4; f32 multiply-adds for f16, bf16", from the rows (each
// dtype's first).
std::string KernelLine(const AttentionBenchResult& r) {
  std::string kernel;
  // Each arithmetic (AttentionArithmetic) with its dtypes: the narrower ones in the order they
  // first appear, f32 last.
  std::vector<std::pair<std::string, std::string>> lists = {{"f32", ""}};
  for (KvDtype dtype : r.options.kv_dtypes) {
    for (const AttentionBenchRow& row : r.rows) {
      if (row.kv_dtype != dtype) continue;
      kernel = row.kernel;
      auto it = std::find_if(lists.begin(), lists.end(),
                             [&](const auto& l) { return l.first == row.arithmetic; });
      if (it == lists.end()) it = lists.insert(lists.end() - 1, {row.arithmetic, ""});
      it->second += (it->second.empty() ? "" : ", ") + std::string(KvDtypeName(dtype));
      break;
    }
  }
  std::string line = "kernel " + kernel + ":";
  const char* sep = "";
  for (const auto& [arithmetic, list] : lists) {
    if (list.empty()) continue;
    line += sep;
    line +=
        arithmetic == "f32" ? " f32 multiply-adds for " : " " + arithmetic + " dot products for ";
    line += list;
    sep = ";";
  }
  return line;
}

}  // namespace

double KvBytesRatioOverF16(KvDtype dtype, int head_dim) {
  auto row_bytes = [head_dim](KvDtype d) {
    const RowFormat f = RowFormatOf(d, head_dim);
    return double(f.data_bytes + f.scale_bytes);
  };
  return row_bytes(KvDtype::kF16) / row_bytes(dtype);
}

std::string FormatAttentionBenchText(const AttentionBenchResult& r) {
  const AttentionBenchOptions& o = r.options;
  std::string s = fmt::format(
      "Decode attention: {} query heads / {} KV heads x {}, one query token attending to the whole "
      "context, through PagedAttentionBatch.\n"
      "paged: blocks of {} tokens in shuffled pool order; contiguous: one block per KV head.\n"
      "Each row cycles through copies of its KV (>= {}) so every call reads from memory.\n"
      "Read bandwidth, this run (streaming sum over {}, blocks of runs {} KiB apart per thread, as "
      "many runs as read fastest here of {}):",
      o.n_heads, o.num_kv_heads, o.head_dim, o.block_size, Bytes(o.footprint_bytes),
      Bytes(o.read_bw.bytes), (kReadBlockRunBytes >> 10), ReadStreamCountsText());
  for (size_t i = 0; i < r.read_bw_gb_per_s.size(); ++i) {
    s += fmt::format("{} {} {:.1f} GB/s", i ? "," : "", ThreadsWord(r.read_bw_gb_per_s[i].first),
                     r.read_bw_gb_per_s[i].second);
    if (i < r.read_bw_streams.size()) s += fmt::format(" ({} runs)", r.read_bw_streams[i]);
  }
  s += ";\nthe layouts and settings of each dtype, context and thread count are timed "
       "together, their calls alternating, and their rows' fractions are of the bandwidth "
       "measured again right after them (read bw)";
  if (o.rounds > 1) {
    s += fmt::format(";\neach row is the fastest of {} passes over the whole sweep", o.rounds);
  }
  // Per thread count (read_bw_gb_per_s's order): "1 thread X G/s, 2 threads Y G/s".
  const auto peaks = [&](const std::vector<double>& gmacs) {
    for (size_t i = 0; i < gmacs.size(); ++i) {
      s += fmt::format("{} {} {:.1f} G/s", i ? "," : "", ThreadsWord(r.read_bw_gb_per_s[i].first),
                       gmacs[i]);
    }
  };
  s += "\nf32 multiply-add peak, this run (register-only FMA chains):";
  peaks(r.fma_peak_gmacs);
  s += "\nthe same fed by f16 conversions, one per 4 multiply-adds (f16 KV at GQA 4):";
  peaks(r.f16_fma_peak_gmacs);
  s += "\n" + KernelLine(r) + "\n\n";
  s +=
      fmt::format("{:<9} {:>8} {:>7} {:<10} {:>8} {:>10} {:>11} {:>10} {:>10} {:>8} {:>8} {:>10}\n",
                  "kv_dtype", "context", "threads", "layout", "prefetch", "heads/item", "KV/token",
                  "us/token", "tokens/s", "KV GB/s", "read bw", "of read bw");
  for (const AttentionBenchRow& row : r.rows) {
    s += fmt::format(
        "{:<9} {:>8} {:>7} {:<10} {:>8} {:>10} {:>11} {:>10.1f} {:>10.1f} {:>8.2f} {:>8.1f} "
        "{:>10.2f}\n",
        KvDtypeName(row.kv_dtype), row.context, row.threads, KvLayoutName(row.layout),
        KvPrefetchLevelName(row.prefetch), row.kv_heads_per_item, Bytes(row.kv_bytes_per_token),
        row.us_per_token, row.tokens_per_s, row.kv_gb_per_s, row.read_bw_gb_per_s,
        row.fraction_of_read_bw);
  }
  for (const AttentionBenchSetting& setting : r.settings) {
    AppendPagedOverContiguous(r, setting, &s);
  }
  for (const AttentionBenchSetting& setting : r.settings) AppendOverF16(r, setting, &s);
  AppendSettingRatios(r, &s);
  AppendFmaCeiling(r, &s);
  return s;
}

// Fields of each row: kv_dtype, context, threads, layout ("paged" | "contiguous"), prefetch
// ("l1" | "l2"), item_heads ("auto" or the count asked for), kv_heads_per_item, block_size, kernel
// (e.g. "AVX2_I16"), arithmetic ("int16" | "f32"), rounds, copies, n_heads, num_kv_heads, head_dim,
// iterations, seconds, kv_bytes_per_token, us_per_token, tokens_per_s, kv_gb_per_s,
// read_bw_gb_per_s, read_bw_streams (the probe's runs per thread), fraction_of_read_bw,
// fma_peak_gmacs_per_s, fma_ceiling_gb_per_s, f16_fma_peak_gmacs_per_s, and for f16 rows
// f16_fma_ceiling_gb_per_s.
std::string FormatAttentionBenchJson(const AttentionBenchResult& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const AttentionBenchRow& row : r.rows) {
    nlohmann::ordered_json j;
    j["kv_dtype"] = std::string(KvDtypeName(row.kv_dtype));
    j["context"] = row.context;
    j["threads"] = row.threads;
    j["layout"] = std::string(KvLayoutName(row.layout));
    j["prefetch"] = std::string(KvPrefetchLevelName(row.prefetch));
    j["item_heads"] = ItemHeadsName(row.item_heads);
    j["kv_heads_per_item"] = row.kv_heads_per_item;
    j["block_size"] = row.block_size;
    j["kernel"] = row.kernel;
    j["arithmetic"] = row.arithmetic;
    j["rounds"] = r.options.rounds;
    j["copies"] = row.copies;
    j["n_heads"] = r.options.n_heads;
    j["num_kv_heads"] = r.options.num_kv_heads;
    j["head_dim"] = r.options.head_dim;
    j["iterations"] = row.iterations;
    j["seconds"] = row.seconds;
    j["kv_bytes_per_token"] = row.kv_bytes_per_token;
    j["us_per_token"] = row.us_per_token;
    j["tokens_per_s"] = row.tokens_per_s;
    j["kv_gb_per_s"] = row.kv_gb_per_s;
    j["read_bw_gb_per_s"] = row.read_bw_gb_per_s;
    j["read_bw_streams"] = ForThreads(r, r.read_bw_streams, row.threads);
    j["fraction_of_read_bw"] = row.fraction_of_read_bw;
    j["fma_peak_gmacs_per_s"] = FmaPeakOf(r, row.threads);
    j["fma_ceiling_gb_per_s"] = row.fma_ceiling_gb_per_s;
    j["f16_fma_peak_gmacs_per_s"] = ForThreads(r, r.f16_fma_peak_gmacs, row.threads);
    if (row.kv_dtype == KvDtype::kF16) j["f16_fma_ceiling_gb_per_s"] = row.f16_fma_ceiling_gb_per_s;
    rows.push_back(std::move(j));
  }
  return rows.dump(2);
}

}  // namespace kvengine
