// `kvengine bench tiers`: the time to first token of a repeated long prompt (default 4096
// tokens on the synthetic `llama-1b` preset) when its KV is recomputed, in the pool, in the RAM
// tier, on the disk tier or in Redis, with each tier's transfer rate beside the raw bandwidth of
// its medium measured in the same run (apps/bench/perf/tier_bench.h does the work;
// docs/bench-tiers.md explains the figures).
//
// The disk tier lives in a fresh directory created for the run (inside --kv-disk-path, else
// $TMPDIR, else /tmp) and removed at the end; Redis keys go under a prefix unique to the run and
// are deleted at the end. Redis is never started from here: without --kv-redis row (e) is
// reported as skipped.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "base/size_parse.h"
#include "bench_flags.h"
#include "cli_flags.h"
#include "model/model.h"
#include "model/kv_groups.h"
#include "model_files.h"
#include "bench/perf/tier_bench.h"
#include "report/perf_reports.h"

namespace kvengine::cli {

void RegisterBenchTiers(CLI::App* bench, int* exit_code);

namespace {

struct BenchTiersFlags {
  TierBenchOptions options;
  CommonFlags common;  // -m, --kv-dtype, --kv-dtype-map, --block-size, --mmap, --json.
  int threads = 0;
  std::string prompt_tokens = "4096";
  std::string kv_memory = "1GiB";
  int64_t max_num_batched_tokens = 2048;
  std::string swap_space = "1GiB";
  std::string kv_disk_path;  // Empty: $TMPDIR, else /tmp.
  std::string kv_disk_size = "8GiB";
  std::string kv_redis;
  std::string svg_path;
};

// A directory made for this run (mkdtemp inside `parent`) and removed with everything in it when
// the run ends, however it ends.
class RunDirectory {
 public:
  static Result<std::unique_ptr<RunDirectory>> Create(const std::string& parent) {
    std::string templ = parent + "/kvengine-bench-tiers-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return Unavailable(fmt::format("--kv-disk-path: cannot create a directory in {}: {}", parent,
                                     std::strerror(errno)));
    }
    return std::unique_ptr<RunDirectory>(new RunDirectory(std::move(templ)));
  }
  ~RunDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

Result<uint64_t> Size(const std::string& text, const char* flag) {
  Result<uint64_t> n = ParseSize(text);
  if (!n.ok()) return InvalidArgument(std::string(flag) + ": " + n.status().message());
  return *n;
}

int RunBenchTiers(BenchTiersFlags& f) {
  TierBenchOptions& o = f.options;
  Result<uint64_t> prompt = ParseTokenCount(f.prompt_tokens);
  if (!prompt.ok()) {
    return FailUsage(InvalidArgument("--prompt-tokens: " + prompt.status().message()));
  }
  o.prompt_tokens = int64_t(std::min<uint64_t>(*prompt, uint64_t{1} << 40));
  EngineOptions& eo = o.engine;
  eo.threads = f.threads;
  eo.sched.max_num_batched_tokens = f.max_num_batched_tokens;
  eo.sched.max_num_seqs = 4;  // The bench runs one request at a time.
  eo.kv.block_size = f.common.block_size;
  Result<uint64_t> mem = Size(f.kv_memory, "--kv-cache-memory-bytes");
  Result<uint64_t> ram = Size(f.swap_space, "--swap-space");
  Result<uint64_t> disk = Size(f.kv_disk_size, "--kv-disk-size");
  for (const Result<uint64_t>* r : {&mem, &ram, &disk}) {
    if (!r->ok()) return Fail(r->status());
  }
  if (*ram == 0) return FailUsage(InvalidArgument("--swap-space must be > 0: row (c) needs RAM"));
  eo.kv.memory_bytes = *mem;
  eo.tiers.ram_bytes = *ram;
  eo.tiers.disk_bytes = *disk;
  eo.tiers.redis = f.kv_redis;
  // Unique to the run, so that no earlier run's blocks answer the recompute row.
  eo.tiers.redis_key_prefix = fmt::format(
      "kvengine:bench-tiers:{}-{}:", ::getpid(),
      std::chrono::steady_clock::now().time_since_epoch().count());
  if (!f.kv_redis.empty()) std::signal(SIGPIPE, SIG_IGN);  // A dropped socket is an error.

  if (!f.svg_path.empty()) {  // Before the run: a bad path fails at once.
    if (Status s = CheckWritable(f.svg_path, "--svg"); !s.ok()) return Fail(s);
  }
  Result<ModelFile> mf = OpenModelFile(f.common.model, LoadModeOf(f.common));
  if (!mf.ok()) return Fail(mf.status());
  Result<std::unique_ptr<Model>> loaded = LoadModel(mf->file, f.common.model);
  if (!loaded.ok()) return Fail(loaded.status());
  std::shared_ptr<const Model> model(std::move(*loaded));
  const ModelConfig& cfg = model->config();
  if (o.prompt_tokens + 1 > cfg.context_length) {
    return Fail(OutOfRange(fmt::format("--prompt-tokens {}: the model's context is {} tokens",
                                       o.prompt_tokens, cfg.context_length)));
  }
  Result<KvDtypeMap> dtypes = ResolveKvDtypes(f.common, cfg.n_layers);
  if (!dtypes.ok()) return Fail(dtypes.status());
  Result<std::vector<KvGroupSpec>> groups = BuildKvGroups(cfg, *dtypes);
  if (!groups.ok()) return Fail(groups.status());
  eo.kv.groups = *groups;
  eo.kv.max_model_len = o.prompt_tokens + 1;

  std::string parent = f.kv_disk_path;
  if (parent.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  Result<std::unique_ptr<RunDirectory>> dir = RunDirectory::Create(parent);
  if (!dir.ok()) return Fail(dir.status());
  eo.tiers.disk_path = (*dir)->path();

  auto log = [](std::string_view line) {
    std::fprintf(stderr, "bench tiers: %.*s\n", int(line.size()), line.data());
  };
  log(fmt::format("disk tier in {}; Redis {}", eo.tiers.disk_path,
                  f.kv_redis.empty() ? "off (row (e) skipped)" : f.kv_redis));
  Result<TierBenchResult> r = RunTierBench(model, f.common.model, o, log);
  if (!r.ok()) return Fail(r.status());
  const std::string out =
      f.common.json ? FormatTierBenchJson(*r) + "\n"
                    : FormatTierBenchText(*r) +
                          (mf->synthetic ? "synthetic model (random weights)\n" : "");
  std::fputs(out.c_str(), stdout);
  if (!f.svg_path.empty()) {
    if (Status s = WriteTextFile(f.svg_path, FormatTierBenchSvg(*r)); !s.ok()) return Fail(s);
  }
  return 0;
}

}  // namespace

void RegisterBenchTiers(CLI::App* bench, int* exit_code) {
  auto f = std::make_shared<BenchTiersFlags>();
  TierBenchOptions& o = f->options;
  CLI::App* cmd = bench->add_subcommand(
      "tiers",
      "TTFT of a repeated long prompt whose KV is recomputed, in the pool, in the RAM tier, on "
      "the disk tier or in Redis, with each tier's transfer rate beside the raw bandwidth of its "
      "medium (memcpy, O_DIRECT file read, pipelined Redis GET) measured in the same run");
  f->common.model = "llama-1b";
  cmd->add_option("-m,--model", f->common.model,
                  "GGUF file, or a synthetic preset generated once into the cache (tiny, small, "
                  "llama-1b, mistral-tiny, mistral-small; random weights)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(0, 1024));
  AddKvFlags(cmd, &f->common);
  cmd->add_option("-p,--prompt-tokens", f->prompt_tokens, TierBenchOptions::kPromptHelp)
      ->capture_default_str();
  cmd->add_option("--repeat", o.repeat, TierBenchOptions::kRepeatHelp)
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--recompute-repeat", o.recompute_repeat, TierBenchOptions::kRecomputeRepeatHelp)
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--raw-passes", o.raw_passes, TierBenchOptions::kRawPassesHelp)
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, TierBenchOptions::kSeedHelp)->capture_default_str();
  cmd->add_option("--kv-cache-memory-bytes", f->kv_memory, "KV pool size")
      ->check(SizeCheck())
      ->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens,
                  "Tokens per forward pass (the recompute row's prefill chunk)")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--swap-space", f->swap_space, "Capacity of the host-RAM tier")
      ->check(SizeCheck())
      ->capture_default_str();
  cmd->add_option("--kv-disk-path", f->kv_disk_path,
                  "Where the disk tier goes: a new directory is made inside this one for the run "
                  "and removed at the end (default: $TMPDIR, else /tmp)");
  cmd->add_option("--kv-disk-size", f->kv_disk_size, "Capacity of the disk tier")
      ->check(SizeCheck())
      ->capture_default_str();
  cmd->add_option("--kv-redis", f->kv_redis,
                  "Redis for row (e): host:port or unix:PATH (not started by the bench; without "
                  "it row (e) is skipped)");
  AddMmapFlag(cmd, &f->common);
  cmd->add_flag("--json", f->common.json, "Print a JSON array of rows on stdout");
  cmd->add_option("--svg", f->svg_path,
                  "Also write a chart (TTFT per row, each tier's read rate beside its raw medium) "
                  "to this SVG file");
  cmd->callback([f, exit_code] { *exit_code = RunBenchTiers(*f); });
}

}  // namespace kvengine::cli
