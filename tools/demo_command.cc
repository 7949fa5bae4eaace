// `kvengine demo`: the engine end to end in one command, with no download and no flag. A short
// mixed workload (apps/demo/demo_workload.h) runs in-process through the real scheduler and KV
// manager twice — f16 KV, then int8 KV — and a one-screen report compares tokens/s, TTFT, KV
// bytes per token, the measured KV peak against contiguous max-length preallocation, the prefix
// hit rate and int8's KV memory, then says how to run the same on a real model and serve it.
#include <cstdio>
#include <memory>

#include "base/thread_pool.h"
#include "cli_flags.h"
#include "commands.h"
#include "report/demo_report.h"
#include "demo/demo_runner.h"
#include "demo/demo_workload.h"
#include "kernels/kernel_target.h"
#include "model/model.h"
#include "model_files.h"
#include "progress.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::cli {
namespace {

struct DemoFlags {
  CommonFlags common;
  int threads = 0;
  double scale = 1.0;
};

int RunDemoCommand(DemoFlags& f) {
  Result<ModelFile> mf = OpenModelFile(f.common.model, LoadModeOf(f.common));
  if (!mf.ok()) return Fail(mf.status());
  Result<std::unique_ptr<Model>> loaded = LoadModel(mf->file, mf->path);
  if (!loaded.ok()) return Fail(loaded.status());
  std::shared_ptr<const Model> model(std::move(loaded).value());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*mf->file);
  if (!tok.ok()) return Fail(tok.status());
  Result<int64_t> ctx = ResolveCtx(f.common, model->config());
  if (!ctx.ok()) return Fail(ctx.status());

  const demo::WorkloadOptions wanted = demo::WorkloadOptions().Scaled(f.scale);
  Result<demo::WorkloadOptions> fitted = demo::FitToContext(wanted, *ctx);
  if (!fitted.ok()) return Fail(fitted.status());
  Result<demo::Workload> workload = demo::BuildWorkload(**tok, *fitted);
  if (!workload.ok()) return Fail(workload.status());

  demo::RunOptions ro;
  ro.block_size = f.common.block_size;
  ro.max_model_len = *ctx;
  ro.threads = f.threads;
  ro.model_fingerprint = mf->path;
  const int threads = f.threads > 0 ? f.threads : ThreadPool::DefaultThreadCount();
  if (!f.common.json) {
    std::fprintf(stderr,
                 "kvengine demo: %zu requests (%lld prompt tokens) on %s, %d threads: f16 KV, "
                 "then int8 KV\n",
                 workload->requests.size(), static_cast<long long>(workload->TotalPromptTokens()),
                 f.common.model.c_str(), threads);
  }
  demo::RunResult runs[2];
  const KvDtype dtypes[2] = {KvDtype::kF16, KvDtype::kInt8};
  for (int k = 0; k < 2; ++k) {
    ProgressBar bar(std::string(KvDtypeName(dtypes[k])) + " KV run");
    ro.kv_dtype = dtypes[k];
    ro.on_progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
    Result<demo::RunResult> r = demo::RunWorkload(model, *workload, ro);
    bar.Finish();
    if (!r.ok()) return Fail(r.status());
    runs[k] = std::move(r).value();
    if (!f.common.json) {
      std::fprintf(stderr, "kvengine demo: %s KV run done in %.1f s\n",
                   std::string(KvDtypeName(dtypes[k])).c_str(), runs[k].wall_s);
    }
  }

  demo::ReportInput in;
  in.model = f.common.model;
  in.synthetic = mf->synthetic;
  in.n_layers = model->config().n_layers;
  in.threads = threads;
  in.kernel_target = ActiveKernelTarget();
  if (fitted->LongestRequest() < wanted.LongestRequest()) in.shrunk_from = wanted.LongestRequest();
  in.workload = &*workload;
  in.f16 = &runs[0];
  in.int8 = &runs[1];
  const std::string out = f.common.json ? demo::FormatReportJson(in) : demo::FormatReport(in);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void RegisterDemoCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<DemoFlags>();
  f->common.model = "small";
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Run a short mixed workload (shared system prompt, multi-turn chat, long document) "
      "through the engine with f16 and int8 KV, and report speed, TTFT and KV memory");
  cmd->add_option("-m,--model", f->common.model,
                  "GGUF file, or a synthetic preset generated once into the cache (tiny, small, "
                  "llama-1b, mistral-tiny, mistral-small; random weights)")
      ->capture_default_str();
  AddCtxFlag(cmd, &f->common);
  cmd->add_option("--block-size", f->common.block_size, "Tokens per KV block")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--scale", f->scale,
                  "Multiply the workload's request counts and lengths (0.5: half as big)")
      ->check(CLI::Range(0.01, 16.0))
      ->capture_default_str();
  AddMmapFlag(cmd, &f->common);
  AddJsonFlag(cmd, &f->common);
  cmd->callback([f, exit_code] { *exit_code = RunDemoCommand(*f); });
}

}  // namespace kvengine::cli
