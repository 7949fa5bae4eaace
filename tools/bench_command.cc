// `kvengine bench <what>`: benchmarks that print ratios measured in the same run.
//   bench kv   the workload benchmark: the real block manager under synthetic request streams,
//              paged (with and without prefix caching) vs contiguous reservation.
//   bench attention   paged decode attention KV GB/s vs the measured read bandwidth
//                     (bench_attention_command.cc).
//   bench decode      a model's prefill and decode tokens/s at KV depths and batch sizes
//                     (bench_decode_command.cc).
//   bench tiers       TTFT of a repeated long prompt from the pool and each KV offload tier,
//                     with tier vs raw medium bandwidth (bench_tiers_command.cc).
#include <cstdio>
#include <memory>

#include "base/size_parse.h"
#include "bench_flags.h"
#include "cli_flags.h"
#include "commands.h"
#include "progress.h"
#include "bench/kv/kv_bench.h"
#include "report/kv_bench_report.h"

namespace kvengine::cli {

// bench_tiers_command.cc (declared here rather than in commands.h, which lists the others).
void RegisterBenchTiers(CLI::App* bench, int* exit_code);

namespace {

struct BenchKvFlags {
  CommonFlags common;
  KvBenchOptions options;
  std::vector<std::string> workloads;
  std::vector<std::string> policies;
  std::string svg_path;
};

int RunBenchKv(BenchKvFlags& f) {
  KvBenchOptions& o = f.options;
  Result<ResolvedModel> model = ResolveModel(f.common.model);
  if (!model.ok()) return Fail(model.status());
  o.model = model->config.name;
  o.model_config = model->config;
  Result<KvDtypeMap> dtypes = ResolveKvDtypes(f.common, model->config.n_layers);
  if (!dtypes.ok()) return Fail(dtypes.status());
  o.kv_dtype = dtypes->default_dtypes.k;
  o.kv_dtypes = *dtypes;
  o.block_size = f.common.block_size;
  if (!f.common.mem.empty()) {
    Result<std::optional<uint64_t>> mem = ResolveMem(f.common);
    if (!mem.ok()) return Fail(mem.status());
    o.kv_memory_bytes = **mem;
  }
  if (!f.common.ctx.empty()) {
    Result<uint64_t> ctx = ParseTokenCount(f.common.ctx);
    if (!ctx.ok()) return FailUsage(InvalidArgument("--ctx: " + ctx.status().message()));
    o.max_model_len = static_cast<int64_t>(*ctx);
  }
  if (!f.workloads.empty()) {
    o.workloads.clear();
    for (const std::string& w : f.workloads) {
      Result<KvWorkload> p = ParseKvWorkload(w);
      if (!p.ok()) return FailUsage(p.status());
      o.workloads.push_back(*p);
    }
  }
  if (!f.policies.empty()) {
    o.policies.clear();
    for (const std::string& w : f.policies) {
      Result<KvPolicy> p = ParseKvPolicy(w);
      if (!p.ok()) return FailUsage(p.status());
      o.policies.push_back(*p);
    }
  }
  if (!f.svg_path.empty()) {  // Before the run: a bad path fails at once.
    if (Status s = CheckWritable(f.svg_path, "--svg"); !s.ok()) return Fail(s);
  }
  ProgressBar bar("bench kv");
  Result<std::vector<KvBenchRow>> rows =
      RunKvBench(o, [&bar](int64_t done, int64_t total) { bar.Update(done, total); });
  bar.Finish();
  if (!rows.ok()) return Fail(rows.status());
  if (!f.svg_path.empty()) {
    if (Status s = WriteTextFile(f.svg_path, FormatKvBenchSvg(*rows, o)); !s.ok()) return Fail(s);
  }
  const std::string out =
      f.common.json ? FormatKvBenchJson(*rows) + "\n" : FormatKvBenchText(*rows, o);
  std::fputs(out.c_str(), stdout);
  return 0;
}

void RegisterBenchKv(CLI::App* bench, int* exit_code) {
  auto f = std::make_shared<BenchKvFlags>();
  CLI::App* cmd = bench->add_subcommand(
      "kv", "Workload benchmark of the KV block manager (no model): synthetic ShareGPT-like, "
            "shared-prefix and multi-turn request streams under one KV memory budget, paged "
            "with and without prefix caching vs contiguous max-length reservation");
  KvBenchOptions& o = f->options;
  f->common.model = o.model;
  AddModelFlag(cmd, &f->common);
  cmd->add_option("-c,--ctx,--max-model-len", f->common.ctx,
                  std::string(KvBenchOptions::kMaxModelLenHelp) + " (default 4096)")
      ->check(TokenCountCheck(1, uint64_t{1} << 24));
  AddKvFlags(cmd, &f->common);
  AddMemFlag(cmd, &f->common, std::string(KvBenchOptions::kKvMemoryHelp) + " (default 4GiB)");
  AddJsonFlag(cmd, &f->common);
  cmd->add_option("--requests", o.num_requests, KvBenchOptions::kNumRequestsHelp)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--turns", o.turns, KvBenchOptions::kTurnsHelp)
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--system-prompt", o.system_prompt_tokens, KvBenchOptions::kSystemPromptHelp)
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, KvBenchOptions::kSeedHelp)->capture_default_str();
  cmd->add_option("--watermark", o.watermark, KvBenchOptions::kWatermarkHelp)
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  cmd->add_option("--workloads", f->workloads, KvBenchOptions::kWorkloadsHelp)->delimiter(',');
  cmd->add_option("--policies", f->policies, KvBenchOptions::kPoliciesHelp)->delimiter(',');
  cmd->add_option("--svg", f->svg_path, "Also write a bar chart of peak concurrency to this SVG file");
  cmd->callback([f, exit_code] { *exit_code = RunBenchKv(*f); });
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print ratios measured in one run");
  bench->require_subcommand(1);
  RegisterBenchKv(bench, exit_code);
  RegisterBenchAttention(bench, exit_code);
  RegisterBenchDecode(bench, exit_code);
  RegisterBenchTiers(bench, exit_code);
}

}  // namespace kvengine::cli
