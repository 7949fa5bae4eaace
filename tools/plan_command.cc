// `kvengine plan`: KV bytes per token and per sequence, and what fits in a memory budget.
#include <cstdio>
#include <memory>

#include "cli_flags.h"
#include "commands.h"
#include "planner/kv_plan.h"
#include "report/kv_plan_report.h"

namespace kvengine::cli {
namespace {

struct PlanFlags {
  CommonFlags common;
  int64_t batch = 1;
  int sink_tokens = 0;
  int streaming_window = 0;
};

int RunPlan(const PlanFlags& f) {
  Result<ResolvedModel> model = ResolveModel(f.common.model);
  if (!model.ok()) return Fail(model.status());
  Result<KvDtypeMap> dtypes = ResolveKvDtypes(f.common, model->config.n_layers);
  if (!dtypes.ok()) return Fail(dtypes.status());
  Result<int64_t> ctx = ResolveCtx(f.common, model->config);
  if (!ctx.ok()) return Fail(ctx.status());
  Result<std::optional<uint64_t>> mem = ResolveMem(f.common);
  if (!mem.ok()) return Fail(mem.status());
  PlanOptions o;
  o.ctx = *ctx;
  o.batch = f.batch;
  o.block_size = f.common.block_size;
  o.memory_bytes = *mem;
  o.group_options.sink_tokens = f.sink_tokens;
  o.group_options.streaming_window = f.streaming_window;
  Result<KvPlan> plan = PlanKv(model->config, *dtypes, o);
  if (!plan.ok()) return Fail(plan.status());
  const std::string out = f.common.json ? FormatPlanJson(*plan) + "\n" : FormatPlanText(*plan);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "KV memory per token and per sequence, and how many tokens and sequences fit in "
              "a memory budget — exactly what the engine's pool allocates");
  AddModelFlag(cmd, &flags->common);
  AddCtxFlag(cmd, &flags->common);
  AddKvFlags(cmd, &flags->common);
  AddMemFlag(cmd, &flags->common, "KV memory budget: report max tokens and sequences that fit");
  AddJsonFlag(cmd, &flags->common);
  cmd->add_option("-b,--batch", flags->batch, "Sequences of --ctx tokens for the batch total")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--streaming-window", flags->streaming_window,
                  "StreamingLLM: turn full-attention layers into a window of this many tokens "
                  "(0 = off)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--attention-sinks", flags->sink_tokens,
                  "StreamingLLM: first tokens kept forever with --streaming-window (default 0)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->callback([flags, exit_code] { *exit_code = RunPlan(*flags); });
}

}  // namespace kvengine::cli
