// `kvengine bench-serve`: the serving benchmark. Replays a synthetic workload (sharegpt,
// shared_prefix, multi_turn) against an OpenAI-compatible server — one given with --url, or
// one started in this process on an ephemeral loopback port with serve's model and engine
// flags — and reports throughput, TTFT/TPOT/ITL/E2E percentiles with vLLM's definitions, and
// the server's prefix-cache hit rate and peak KV usage from /metrics (apps/bench/serve does the
// work; docs/bench-serve.md describes every figure).
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include "cli_flags.h"
#include "commands.h"
#include "input_files.h"
#include "report/serve_report.h"
#include "bench/serve/bench_serve.h"
#include "progress.h"
#include "serve_setup.h"
#include "server/backend.h"
#include "server/http_server.h"

namespace kvengine::cli {
namespace {

struct BenchServeFlags {
  ServeFlags serve;  // In-process server (without --url).
  loadgen::BenchServeOptions bench;
  std::string url;
  std::string workload = "sharegpt";
  std::string request_rate = "inf";
  int metrics_interval_ms = 100;
  bool json = false;
  std::string out;
};

enum class OutFormat { kNone, kSvg, kHtml };

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<OutFormat> ResolveOut(const std::string& path) {
  if (path.empty()) return OutFormat::kNone;
  if (EndsWith(path, ".svg")) return OutFormat::kSvg;
  if (EndsWith(path, ".html") || EndsWith(path, ".htm")) return OutFormat::kHtml;
  return InvalidArgument("--out " + path + ": the file must end in .svg or .html");
}

Result<double> ParseRate(const std::string& text) {
  if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  errno = 0;
  const double r = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(r > 0) || !std::isfinite(r)) {
    return InvalidArgument("--request-rate " + text + ": expected a number > 0 or inf");
  }
  return r;
}

Status WriteOut(const std::string& path, OutFormat format, const loadgen::BenchServeResult& r) {
  if (format == OutFormat::kNone) return Status::Ok();
  std::ofstream f(path);
  f << (format == OutFormat::kSvg ? loadgen::FormatBenchSvg(r) : loadgen::FormatBenchHtml(r));
  f.close();
  if (!f) return Unavailable("cannot write " + path);
  return Status::Ok();
}

Result<loadgen::BenchServeResult> RunBench(const loadgen::BenchServeOptions& o) {
  ProgressBar bar("bench-serve");
  Result<loadgen::BenchServeResult> r =
      loadgen::RunBenchServe(o, [&bar](int64_t done, int64_t total) { bar.Update(done, total); });
  bar.Finish();
  return r;
}

// Starts the server in this process on 127.0.0.1 (an ephemeral port), runs the benchmark
// against it, and stops it.
Result<loadgen::BenchServeResult> RunInProcess(BenchServeFlags& f) {
  ServeFlags& s = f.serve;
  s.http.host = "127.0.0.1";
  s.http.port = 0;
  KV_RETURN_IF_ERROR(CheckServeFlags(&s));
  KV_ASSIGN_OR_RETURN(std::unique_ptr<server::HttpServer> http, server::HttpServer::Start(s.http));
  Result<Loaded> loaded = LoadAndStart(s, "kvengine bench-serve");
  if (!loaded.ok()) {
    http->Shutdown(std::chrono::milliseconds(0));
    return loaded.status();
  }
  server::EngineBackend backend(*loaded->engine);
  http->SetModel(MakeServedModel(*loaded, &backend));
  f.bench.url = "http://127.0.0.1:" + std::to_string(http->port());
  Result<loadgen::BenchServeResult> r = RunBench(f.bench);
  http->Shutdown(std::chrono::milliseconds(1000));
  loaded->engine->Stop();
  return r;
}

int RunBenchServe(BenchServeFlags& f) {
  Result<KvWorkload> workload = ParseKvWorkload(f.workload);
  if (!workload.ok()) return FailUsage(workload.status());
  f.bench.workload = *workload;
  Result<double> rate = ParseRate(f.request_rate);
  if (!rate.ok()) return FailUsage(rate.status());
  f.bench.load.request_rate = *rate;
  f.bench.sample_interval = std::chrono::milliseconds(f.metrics_interval_ms);
  Result<OutFormat> out = ResolveOut(f.out);
  if (!out.ok()) return FailUsage(out.status());
  if (Status s = CheckOutputFile(f.out, "--out"); !s.ok()) return Fail(s);
  if (!f.url.empty()) f.bench.url = f.url;
  Result<loadgen::BenchServeResult> r = f.url.empty() ? RunInProcess(f) : RunBench(f.bench);
  if (!r.ok()) return Fail(r.status());
  if (Status s = WriteOut(f.out, *out, *r); !s.ok()) return Fail(s);
  const std::string report = f.json ? loadgen::FormatBenchJson(*r) : loadgen::FormatBenchText(*r);
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  if (r->summary.completed == 0) {
    return Fail(Unavailable("no request completed" + (r->summary.errors.empty()
                                                          ? std::string()
                                                          : ": " + r->summary.errors[0].first)));
  }
  return 0;
}

void AddWorkloadFlags(CLI::App* cmd, BenchServeFlags* f) {
  loadgen::BenchServeOptions& o = f->bench;
  cmd->add_option("--workload", f->workload,
                  "sharegpt: ShareGPT-like prompt/output lengths; shared_prefix: one system "
                  "prompt shared by every request; multi_turn: conversations whose turns resend "
                  "the history")
      ->check(
          CLI::IsMember({"sharegpt", "shared_prefix", "multi_turn", "shared-prefix", "multi-turn"}))
      ->capture_default_str();
  cmd->add_option("--num-prompts", o.num_prompts, "Requests to send (multi_turn: turns in all)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--turns", o.turns, "multi_turn: turns per conversation")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--system-prompt-tokens", o.system_prompt_tokens,
                  "shared_prefix: tokens of the shared system prompt (default: min(1024, "
                  "max_model_len / 2))")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--seed", o.seed, "Seed of the workload and of the arrival times")
      ->capture_default_str();
  cmd->add_option("--max-prompt-tokens", o.caps.max_prompt_tokens,
                  "Cut each prompt (multi_turn: each new user message) to this many tokens")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  cmd->add_option("--max-output-tokens", o.caps.max_output_tokens,
                  "Ask for at most this many output tokens per request")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
}

void AddTrafficFlags(CLI::App* cmd, BenchServeFlags* f) {
  cmd->add_option("--request-rate", f->request_rate,
                  "Conversations started per second, as a Poisson process (inf: all at once)")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", f->bench.load.max_concurrency,
                  "Requests in flight at most (default: no limit but 1024)")
      ->check(CLI::Range(1, loadgen::kMaxWorkers));
  cmd->add_option("--metrics-interval-ms", f->metrics_interval_ms,
                  "How often GET /metrics is sampled during the run (peak KV usage, the chart)")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print every figure as one JSON object on stdout");
  cmd->add_option("--out", f->out,
                  "Also write a report: FILE.svg (a chart of KV usage, running requests, TTFT "
                  "and ITL) or FILE.html (the figures and the chart)");
}

}  // namespace

void RegisterBenchServeCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<BenchServeFlags>();
  f->serve.common.model = "small";
  // The client may hold up to 1024 requests open at once: the in-process server queues them
  // all rather than answering 503 (serve's own default is 256).
  f->serve.max_queued_requests = loadgen::kMaxWorkers;
  CLI::App* cmd = app.add_subcommand(
      "bench-serve",
      "Serving benchmark: replay a synthetic workload against an OpenAI-compatible server "
      "(--url, or one started in-process) and report throughput, TTFT/TPOT/ITL percentiles, "
      "prefix-cache hit rate and peak KV usage");
  CLI::Option* url = cmd->add_option("--url", f->url,
                                     "A running server (http://127.0.0.1:8080); without it the "
                                     "model and engine flags below start one in this process");
  cmd->add_option("--vocab-size", f->bench.vocab_size,
                  "Token ids are drawn below this (default: vocab_size from GET /v1/models)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 31));
  AddWorkloadFlags(cmd, f.get());
  AddTrafficFlags(cmd, f.get());
  for (CLI::Option* o : AddServeModelFlags(cmd, &f->serve)) url->excludes(o);
  for (CLI::Option* o : AddServeEngineFlags(cmd, &f->serve)) url->excludes(o);
  cmd->callback([f, exit_code] { *exit_code = RunBenchServe(*f); });
}

}  // namespace kvengine::cli
