// `kvengine serve`: the OpenAI-compatible HTTP server (src/server) over the engine.
//
// Order of start: check every flag and file that needs no model (CheckServeFlags: a bad one
// exits before anything listens), bind the port and answer /health with 503 at once (so an
// orchestrator sees the process alive while a large model loads), load the model and
// tokenizer, create and start the engine, log its KV capacity, then publish the model (health
// 200). SIGINT/SIGTERM drain: health and new requests answer 503, requests in flight finish (up
// to --drain-timeout, then they are cancelled), the engine stops, and the process exits 0. A
// second signal exits at once.
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

#include "cli_flags.h"
#include "commands.h"
#include "serve_setup.h"
#include "server/backend.h"
#include "server/http_server.h"

namespace kvengine::cli {
namespace {

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

int RunServe(ServeFlags& f) {
  if (Status s = CheckServeFlags(&f); !s.ok()) return Fail(s);
  SignalWatcher signals;  // Before any other thread starts.
  Result<std::unique_ptr<server::HttpServer>> http = server::HttpServer::Start(f.http);
  if (!http.ok()) return Fail(http.status());
  std::fprintf(stderr, "kvengine serve: listening on http://%s:%d (loading %s)\n",
               f.http.host.c_str(), (*http)->port(), f.common.model.c_str());
  const auto drain = std::chrono::milliseconds(int64_t(f.drain_timeout_s * 1000));
  Result<Loaded> loaded = LoadAndStart(f, "kvengine serve");
  if (!loaded.ok()) {
    (*http)->Shutdown(std::chrono::milliseconds(0));
    return Fail(loaded.status());
  }
  server::EngineBackend backend(*loaded->engine);
  const server::ServedModel served = MakeServedModel(*loaded, &backend);
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
  AddServeModelFlags(cmd, f.get());
  cmd->add_option("--host", f->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", f->http.port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  AddServeEngineFlags(cmd, f.get());
  cmd->add_option("--max-body-bytes", f->max_body, "Largest request body; larger ones get 413")
      ->check(SizeCheck())
      ->capture_default_str();
  cmd->add_option("--http-threads", f->http_threads,
                  "HTTP worker threads at most; each open connection holds one (default: "
                  "max-num-seqs + max-queued-requests + 64)")
      ->check(CLI::Range(0, 65536));
  cmd->add_option("--api-key", f->http.api_key,
                  "Require \"Authorization: Bearer KEY\" on /v1/* (401 otherwise); /health and "
                  "/metrics stay open")
      ->envname("KVENGINE_API_KEY");
  cmd->add_option("--drain-timeout", f->drain_timeout_s,
                  "Seconds SIGINT/SIGTERM wait for requests in flight before cancelling them")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->callback([f, exit_code] { *exit_code = RunServe(*f); });
}

}  // namespace kvengine::cli
