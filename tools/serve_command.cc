// `kvengine serve`: the OpenAI-compatible HTTP server (src/server) over the engine.
//
// Order of start: bind the port and answer /health with 503 at once (so an orchestrator sees
// the process alive while a large model loads), load the model and tokenizer, create and start
// the engine, log its KV capacity, then publish the model (health 200). SIGINT/SIGTERM drain:
// health and new requests answer 503, requests in flight finish (up to --drain-timeout, then
// they are cancelled), the engine stops, and the process exits 0. A second signal exits at once.
//
// Signals are blocked in every thread (the mask is set before any thread starts and threads
// inherit it) and taken by one watcher thread with sigtimedwait, so no handler runs in a
// signal context.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "base/size_parse.h"
#include "cli_flags.h"
#include "commands.h"
#include "model/model.h"
#include "model_files.h"
#include "planner/kv_plan.h"
#include "runtime/engine.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::cli {
namespace {

constexpr uint64_t kDefaultKvCap = uint64_t{1} << 30;  // 1 GiB.

struct ServeFlags {
  CommonFlags common;
  server::HttpServerOptions http;
  std::string served_model_name;
  int threads = 0;
  int max_num_seqs = 64;
  int64_t max_num_batched_tokens = 2048;
  int max_queued_requests = 256;
  bool prefix_caching = true;
  std::string kv_memory;
  std::string kv_policy = "paged";
  std::string max_body = "8MiB";
  int http_threads = 0;
  double drain_timeout_s = 30;
};

// Waits for SIGINT/SIGTERM on its own thread. The first one requests a drain; a second one
// exits the process at once.
class SignalWatcher {
 public:
  // Blocks the signals in the calling thread (and so in every thread started after).
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] { Loop(); });
  }
  ~SignalWatcher() {
    stop_ = true;
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  bool requested() const { return requested_; }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return requested_.load(); });
  }

 private:
  void Loop() {
    const timespec poll{0, 200 * 1000 * 1000};
    while (!stop_) {
      const int sig = sigtimedwait(&set_, nullptr, &poll);
      if (sig < 0) continue;  // Timeout or EINTR: check stop_ again.
      if (requested_) {
        std::fprintf(stderr, "kvengine serve: second signal, exiting now\n");
        std::_Exit(130);
      }
      std::fprintf(stderr, "kvengine serve: %s received, draining\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
      {
        std::lock_guard<std::mutex> lock(mu_);
        requested_ = true;
      }
      cv_.notify_all();
    }
  }

  sigset_t set_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> requested_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

// --kv-cache-memory-bytes, or by default what max_num_seqs sequences of max_model_len tokens
// need, capped at 1 GiB but never below one full sequence.
Result<uint64_t> KvMemory(const ServeFlags& f, const ModelConfig& cfg, const KvDtypeMap& dtypes,
                          int64_t ctx) {
  if (!f.kv_memory.empty()) {
    Result<uint64_t> m = ParseSize(f.kv_memory);
    if (!m.ok()) return InvalidArgument("--kv-cache-memory-bytes: " + m.status().message());
    return *m;
  }
  PlanOptions po;
  po.ctx = ctx;
  po.batch = f.max_num_seqs;
  po.block_size = f.common.block_size;
  KV_ASSIGN_OR_RETURN(KvPlan plan, PlanKv(cfg, dtypes, po));
  return std::max(plan.kv_bytes_per_sequence, std::min(kDefaultKvCap, plan.kv_bytes_total));
}

struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;
  int64_t max_model_len = 0;
  server::ChatTemplate chat_template;
  std::string name;
};

Result<Loaded> LoadAndStart(const ServeFlags& f) {
  Loaded l;
  KV_ASSIGN_OR_RETURN(ModelFile mf, OpenModelFile(f.common.model));
  l.file = mf.file;
  KV_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, LoadModel(mf.file, mf.path));
  l.model = std::shared_ptr<const Model>(std::move(model));
  const ModelConfig& cfg = l.model->config();
  KV_ASSIGN_OR_RETURN(l.tokenizer, Tokenizer::FromGguf(*mf.file));
  KV_ASSIGN_OR_RETURN(KvDtypeMap dtypes, ResolveKvDtypes(f.common, cfg.n_layers));
  KV_ASSIGN_OR_RETURN(l.max_model_len, ResolveCtx(f.common, cfg));
  EngineOptions eo;
  eo.max_num_seqs = f.max_num_seqs;
  eo.max_num_batched_tokens = f.max_num_batched_tokens;
  eo.max_queued_requests = f.max_queued_requests;
  eo.threads = f.threads;
  KV_ASSIGN_OR_RETURN(eo.kv.groups, BuildKvGroups(cfg, dtypes));
  eo.kv.block_size = f.common.block_size;
  eo.kv.max_model_len = l.max_model_len;
  eo.kv.enable_prefix_caching = f.prefix_caching;
  eo.kv.model_fingerprint = mf.path;
  KV_ASSIGN_OR_RETURN(eo.kv.memory_bytes, KvMemory(f, cfg, dtypes, l.max_model_len));
  eo.contiguous_reservation = f.kv_policy == "contiguous";
  const Vocab& vocab = l.tokenizer->vocab();
  for (int32_t id : {vocab.special.eos, vocab.special.eot, vocab.special.eom}) {
    if (id != kNoToken) eo.eos_token_ids.push_back(id);
  }
  KV_ASSIGN_OR_RETURN(l.engine, Engine::Create(l.model, eo));
  l.engine->Start();
  l.chat_template = server::ChatTemplate::FromGguf(*mf.file);
  l.name = f.served_model_name.empty() ? f.common.model : f.served_model_name;
  if (mf.synthetic) {
    std::fprintf(stderr,
                 "kvengine serve: synthetic model %s: random weights, the text is "
                 "meaningless\n",
                 mf.path.c_str());
  }
  std::fprintf(stderr, "kvengine serve: %s\n", l.engine->DescribeCapacity().c_str());
  std::fprintf(stderr, "kvengine serve: KV %s, prefix caching %s, policy %s, chat template %s\n",
               dtypes.Describe().c_str(), f.prefix_caching ? "on" : "off", f.kv_policy.c_str(),
               std::string(l.chat_template.name()).c_str());
  return l;
}

int RunServe(ServeFlags& f) {
  Result<uint64_t> body = ParseSize(f.max_body);
  if (!body.ok()) return Fail(InvalidArgument("--max-body-bytes: " + body.status().message()));
  f.http.max_body_bytes = *body;
  f.http.max_threads =
      f.http_threads > 0 ? f.http_threads : f.max_num_seqs + f.max_queued_requests + 64;
  f.http.limits.max_n = std::min(kMaxChoices, f.max_num_seqs);
  SignalWatcher signals;  // Before any other thread starts.
  Result<std::unique_ptr<server::HttpServer>> http = server::HttpServer::Start(f.http);
  if (!http.ok()) return Fail(http.status());
  std::fprintf(stderr, "kvengine serve: listening on http://%s:%d (loading %s)\n",
               f.http.host.c_str(), (*http)->port(), f.common.model.c_str());
  const auto drain = std::chrono::milliseconds(int64_t(f.drain_timeout_s * 1000));
  Result<Loaded> loaded = LoadAndStart(f);
  if (!loaded.ok()) {
    (*http)->Shutdown(std::chrono::milliseconds(0));
    return Fail(loaded.status());
  }
  server::EngineBackend backend(*loaded->engine);
  server::ServedModel served;
  served.name = loaded->name;
  served.backend = &backend;
  served.tokenizer = loaded->tokenizer.get();
  served.chat_template = loaded->chat_template;
  served.max_model_len = loaded->max_model_len;
  (*http)->SetModel(served);
  std::fprintf(stderr, "kvengine serve: ready: model \"%s\", max_model_len %lld\n",
               served.name.c_str(), static_cast<long long>(served.max_model_len));
  signals.Wait();
  (*http)->Shutdown(drain);
  loaded->engine->Stop();
  std::fprintf(stderr, "kvengine serve: stopped\n");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ServeFlags>();
  f->common.model = "small";
  CLI::App* cmd = app.add_subcommand("serve",
                                     "OpenAI-compatible HTTP server over the paged KV "
                                     "cache, with Prometheus /metrics");
  cmd->add_option("-m,--model", f->common.model,
                  "GGUF file, or a synthetic preset generated once into the cache (tiny, small, "
                  "llama-1b, mistral-tiny, mistral-small; random weights)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", f->served_model_name,
                  "The model id in /v1/models and responses (default: the -m value)");
  AddCtxFlag(cmd, &f->common);
  AddKvFlags(cmd, &f->common);
  cmd->add_option("--host", f->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", f->http.port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--max-num-seqs", f->max_num_seqs, "Sequences decoding at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens,
                  "Tokens per forward pass (decodes plus prefill chunks); >= --max-num-seqs")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  cmd->add_option("--max-queued-requests", f->max_queued_requests,
                  "Waiting requests beyond this are answered 503 with Retry-After")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", f->prefix_caching,
                "Reuse the KV of prompt prefixes seen before (on by default)");
  cmd->add_option("--kv-cache-memory-bytes", f->kv_memory,
                  "KV pool size (512MiB, 4GiB); default: what --max-num-seqs sequences of the "
                  "full context need, at most 1GiB but at least one full sequence");
  cmd->add_option("--kv-policy", f->kv_policy,
                  "paged: blocks as tokens arrive; contiguous: reserve max_model_len tokens per "
                  "sequence at admission (emulates pre-PagedAttention servers, for comparison)")
      ->check(CLI::IsMember({"paged", "contiguous"}))
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", f->max_body, "Largest request body; larger ones get 413")
      ->capture_default_str();
  cmd->add_option("--http-threads", f->http_threads,
                  "HTTP worker threads at most; each open connection holds one (default: "
                  "max-num-seqs + max-queued-requests + 64)")
      ->check(CLI::Range(0, 65536));
  cmd->add_option("--drain-timeout", f->drain_timeout_s,
                  "Seconds SIGINT/SIGTERM wait for requests in flight before cancelling them")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->callback([f, exit_code] { *exit_code = RunServe(*f); });
}

}  // namespace kvengine::cli
