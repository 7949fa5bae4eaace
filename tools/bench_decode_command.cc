// `kvengine bench decode`: prefill and decode tokens/s of a model (default: the synthetic
// `llama-1b` preset) at KV depths 0 / 4k / 16k and batches of 1 / 4 / 16 sequences, for each KV
// dtype, with the bytes one step reads and the read bandwidth measured in the same run
// (apps/bench/perf does the work; docs/bench-decode.md explains the figures).
#include <cstdio>
#include <memory>

#include "bench_flags.h"
#include "cli_flags.h"
#include "commands.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/kernel_target.h"
#include "model/model.h"
#include "model_files.h"
#include "bench/perf/decode_bench.h"
#include "progress.h"
#include "report/perf_reports.h"

namespace kvengine::cli {
namespace {

struct BenchDecodeFlags {
  DecodeBenchOptions options;
  CommonFlags common;  // -m, --mmap, --json.
  int threads = 0;
  std::vector<std::string> kv_dtypes = {"f16", "int8"};
  std::vector<std::string> depths = {"0", "4k", "16k"};
  std::vector<std::string> batches = {"1", "4", "16"};
  std::string read_bw_size = "auto";
  std::string isa;
  std::string svg_path;
  std::string attention_kernel;
};

int RunBenchDecode(BenchDecodeFlags& f) {
  DecodeBenchOptions& o = f.options;
  if (!f.isa.empty()) {
    if (Status s = ForceKernelTarget(f.isa); !s.ok()) return Fail(s);
  }
  if (!f.attention_kernel.empty()) {
    if (Status s = ForceAttentionKernels(f.attention_kernel); !s.ok()) return Fail(s);
  }
  Result<std::vector<KvDtype>> dtypes = ParseKvDtypeList(f.kv_dtypes, "--kv-dtypes");
  if (!dtypes.ok()) return FailUsage(dtypes.status());
  o.kv_dtypes = *dtypes;
  Result<std::vector<int64_t>> depths = ParseTokenCountList(f.depths, "--depths", 0);
  if (!depths.ok()) return FailUsage(depths.status());
  o.depths = *depths;
  o.batches.clear();
  if (!(f.batches.size() == 1 && f.batches[0] == "none")) {
    Result<std::vector<int64_t>> batches = ParseTokenCountList(f.batches, "--batches", 1);
    if (!batches.ok()) return FailUsage(batches.status());
    for (int64_t b : *batches) {
      if (b > 4096) return FailUsage(OutOfRange("--batches: at most 4096 sequences"));
      o.batches.push_back(int(b));
    }
  }
  Result<uint64_t> bw = ParseBufferSizeOrAuto(f.read_bw_size, "--read-bw-size", o.read_bw.bytes);
  if (!bw.ok()) return FailUsage(bw.status());
  o.read_bw.bytes = *bw;
  Result<ModelFile> mf = OpenModelFile(f.common.model, LoadModeOf(f.common));
  if (!mf.ok()) return Fail(mf.status());
  Result<std::unique_ptr<Model>> model = LoadModel(mf->file, f.common.model);
  if (!model.ok()) return Fail(model.status());
  if (!f.svg_path.empty()) {  // Before the run: a bad path fails at once.
    if (Status s = CheckWritable(f.svg_path, "--svg"); !s.ok()) return Fail(s);
  }
  ThreadPool pool(f.threads > 0 ? f.threads : ThreadPool::DefaultThreadCount());
  ProgressBar bar("bench decode");
  Result<DecodeBenchResult> r =
      RunDecodeBench(**model, *mf->file, pool, o,
                     [&bar](int64_t done, int64_t total) { bar.Update(done, total); });
  bar.Finish();
  if (!r.ok()) return Fail(r.status());
  const std::string out = f.common.json
                              ? FormatDecodeBenchJson(*r) + "\n"
                              : FormatDecodeBenchText(*r) + "kernels: " + r->weight_kernel +
                                    " (weights), " + r->attention_kernel + " (attention)" +
                                    (mf->synthetic ? "; synthetic model (random weights)\n" : "\n");
  std::fputs(out.c_str(), stdout);
  if (!f.svg_path.empty()) {
    if (Status s = WriteTextFile(f.svg_path, FormatDecodeBenchSvg(*r)); !s.ok()) return Fail(s);
  }
  return 0;
}

}  // namespace

void RegisterBenchDecode(CLI::App* bench, int* exit_code) {
  auto f = std::make_shared<BenchDecodeFlags>();
  DecodeBenchOptions& o = f->options;
  CLI::App* cmd = bench->add_subcommand(
      "decode",
      "Prefill and decode tokens/s of a model over the paged KV cache at several KV depths "
      "(reached by filling the KV with random values) and batch sizes, per KV dtype, with the "
      "bytes a step reads and the read bandwidth measured in the same run");
  f->common.model = "llama-1b";
  cmd->add_option("-m,--model", f->common.model,
                  "GGUF file, or a synthetic preset generated once into the cache (tiny, small, "
                  "llama-1b, mistral-tiny, mistral-small; random weights)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Worker threads (default: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--kv-dtypes", f->kv_dtypes,
                  "KV dtypes (f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--depths", f->depths, DecodeBenchOptions::kDepthsHelp)
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batches", f->batches,
                  std::string(DecodeBenchOptions::kBatchesHelp) + "; none: no batched rows")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batch-depth", o.batch_depth, DecodeBenchOptions::kBatchDepthHelp)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("-p,--prompt-tokens", o.prompt_tokens, DecodeBenchOptions::kPromptHelp)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--prefill-chunk", o.prefill_chunk, "Prompt tokens per forward pass")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--steps", o.steps, DecodeBenchOptions::kStepsHelp)
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--rounds", o.rounds, DecodeBenchOptions::kRoundsHelp)
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--block-size", o.block_size, "Tokens per KV block")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--read-bw-size", f->read_bw_size,
                  kReadBwSizeHelp)
      ->capture_default_str();
  cmd->add_option("--isa", f->isa,
                  "Force a kernel instruction set (AVX3, AVX2, SSE4, SCALAR, ref); default: the "
                  "best this CPU runs (env KVENGINE_ISA too)")
      ->envname("KVENGINE_ISA");
  cmd->add_option("--attention-kernel", f->attention_kernel, kAttentionKernelHelp);
  AddMmapFlag(cmd, &f->common);
  cmd->add_flag("--json", f->common.json, "Print a JSON array of rows on stdout");
  cmd->add_option("--svg", f->svg_path,
                  "Also write a bar chart (decode tokens/s by depth and batch, prefill tokens/s, "
                  "per KV dtype) to this SVG file");
  cmd->callback([f, exit_code] { *exit_code = RunBenchDecode(*f); });
}

}  // namespace kvengine::cli
