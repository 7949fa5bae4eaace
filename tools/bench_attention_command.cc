// `kvengine bench attention`: does paged decode attention read KV at memory speed?
// One decode query against one layer's K/V per context length, KV dtype, thread count and layout
// (paged in shuffled pool order vs contiguous), with KV GB/s as a fraction of the read bandwidth
// measured in the same run (apps/bench/perf does the work; docs/bench-attention.md explains the
// figures).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

#include "kernels/attention/attention_kernel.h"
#include "bench_flags.h"
#include "cli_flags.h"
#include "commands.h"
#include "bench/perf/attention_bench.h"
#include "progress.h"
#include "report/perf_reports.h"

namespace kvengine::cli {
namespace {

struct BenchAttentionFlags {
  AttentionBenchOptions options;
  std::vector<std::string> contexts = {"1k", "4k", "16k", "32k"};
  std::vector<std::string> kv_dtypes = {"f16", "bf16", "fp8_e4m3", "int8", "int4"};
  std::vector<std::string> layouts = {"paged", "contiguous"};
  std::vector<std::string> prefetch = {"auto"};
  std::vector<std::string> item_heads = {"auto"};
  std::string footprint = "auto";
  std::string read_bw_size = "auto";
  std::string svg_path;
  std::string attention_kernel;
  bool json = false;
};

int RunBenchAttention(BenchAttentionFlags& f) {
  AttentionBenchOptions& o = f.options;
  if (!f.attention_kernel.empty()) {
    if (Status s = ForceAttentionKernels(f.attention_kernel); !s.ok()) return Fail(s);
  }
  Result<std::vector<int64_t>> contexts = ParseTokenCountList(f.contexts, "--contexts", 1);
  if (!contexts.ok()) return FailUsage(contexts.status());
  o.contexts = *contexts;
  Result<std::vector<KvDtype>> dtypes = ParseKvDtypeList(f.kv_dtypes, "--kv-dtypes");
  if (!dtypes.ok()) return FailUsage(dtypes.status());
  o.kv_dtypes = *dtypes;
  o.layouts.clear();
  for (const std::string& l : f.layouts) {
    Result<KvLayout> layout = ParseKvLayout(l);
    if (!layout.ok()) return FailUsage(InvalidArgument("--layouts: " + layout.status().message()));
    o.layouts.push_back(*layout);
  }
  o.prefetch_levels.clear();
  for (const std::string& p : f.prefetch) {
    KvPrefetchLevel level = DefaultKvPrefetchLevel();
    if (p == "l1") {
      level = KvPrefetchLevel::kL1;
    } else if (p == "l2") {
      level = KvPrefetchLevel::kL2;
    } else if (p != "auto") {
      return FailUsage(InvalidArgument("--prefetch: '" + p + "' is not auto, l1 or l2"));
    }
    if (std::find(o.prefetch_levels.begin(), o.prefetch_levels.end(), level) ==
        o.prefetch_levels.end()) {
      o.prefetch_levels.push_back(level);
    }
  }
  o.item_heads.clear();
  for (const std::string& h : f.item_heads) {
    int heads = 0;  // auto
    if (h != "auto") {
      const auto [end, ec] = std::from_chars(h.data(), h.data() + h.size(), heads);
      if (ec != std::errc() || end != h.data() + h.size() || heads < 1 || heads > o.num_kv_heads) {
        return FailUsage(InvalidArgument("--item-heads: '" + h + "' is not auto or 1.." +
                                         std::to_string(o.num_kv_heads) + " (the KV heads)"));
      }
    }
    if (std::find(o.item_heads.begin(), o.item_heads.end(), heads) == o.item_heads.end()) {
      o.item_heads.push_back(heads);
    }
  }
  Result<uint64_t> footprint = ParseBufferSizeOrAuto(f.footprint, "--footprint", o.footprint_bytes);
  if (!footprint.ok()) return FailUsage(footprint.status());
  o.footprint_bytes = *footprint;
  Result<uint64_t> bw = ParseBufferSizeOrAuto(f.read_bw_size, "--read-bw-size", o.read_bw.bytes);
  if (!bw.ok()) return FailUsage(bw.status());
  o.read_bw.bytes = *bw;
  if (o.n_heads % o.num_kv_heads != 0) {
    return FailUsage(InvalidArgument("--heads must be a multiple of --kv-heads"));
  }
  if (!f.svg_path.empty()) {  // Before the sweep: a bad path fails at once.
    if (Status s = CheckWritable(f.svg_path, "--svg"); !s.ok()) return Fail(s);
  }
  ProgressBar bar("bench attention");
  Result<AttentionBenchResult> r =
      RunAttentionBench(o, [&bar](int64_t done, int64_t total) { bar.Update(done, total); });
  bar.Finish();
  if (!r.ok()) return Fail(r.status());
  const std::string out =
      f.json ? FormatAttentionBenchJson(*r) + "\n" : FormatAttentionBenchText(*r);
  std::fputs(out.c_str(), stdout);
  if (!f.svg_path.empty()) {
    if (Status s = WriteTextFile(f.svg_path, FormatAttentionBenchSvg(*r)); !s.ok()) return Fail(s);
  }
  return 0;
}

}  // namespace

void RegisterBenchAttention(CLI::App* bench, int* exit_code) {
  auto f = std::make_shared<BenchAttentionFlags>();
  AttentionBenchOptions& o = f->options;
  CLI::App* cmd = bench->add_subcommand(
      "attention",
      "Paged decode attention (one query token, GQA) over synthetic KV: KV GB/s per context, KV "
      "dtype, thread count and layout (paged in shuffled pool order vs contiguous), as a "
      "fraction of the read bandwidth measured in the same run");
  cmd->add_option("--contexts", f->contexts, AttentionBenchOptions::kContextsHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--kv-dtypes", f->kv_dtypes, AttentionBenchOptions::kKvDtypesHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, AttentionBenchOptions::kThreadsHelp)
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--layouts", f->layouts, AttentionBenchOptions::kLayoutsHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prefetch", f->prefetch, AttentionBenchOptions::kPrefetchHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--item-heads", f->item_heads, AttentionBenchOptions::kItemHeadsHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--heads", o.n_heads, "Query heads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--kv-heads", o.num_kv_heads, "KV heads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--head-dim", o.head_dim, "Elements per K/V row")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--block-size", o.block_size, "Tokens per KV block of the paged layout")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--rounds", o.rounds, AttentionBenchOptions::kRoundsHelp)
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--min-time", o.min_seconds, AttentionBenchOptions::kMinTimeHelp)
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  cmd->add_option("--footprint", f->footprint, AttentionBenchOptions::kFootprintHelp)
      ->capture_default_str();
  cmd->add_option("--read-bw-size", f->read_bw_size, kReadBwSizeHelp)->capture_default_str();
  cmd->add_option("--attention-kernel", f->attention_kernel, kAttentionKernelHelp);
  cmd->add_flag("--json", f->json, "Print a JSON array of rows on stdout");
  cmd->add_option(
      "--svg", f->svg_path,
      "Also write a chart (each dtype's fraction of the read bandwidth per context, layout and "
      "thread count) to this SVG file");
  cmd->callback([f, exit_code] { *exit_code = RunBenchAttention(*f); });
}

}  // namespace kvengine::cli
