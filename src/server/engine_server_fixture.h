// The fixture of the end-to-end server tests (engine_server_test.cc,
// engine_server_cancel_test.cc): the real Engine over the `tiny` synthetic model behind the HTTP
// server on 127.0.0.1 (an ephemeral port), driven by httplib's client and raw sockets. Every test
// ends by checking through /metrics that no KV block is left in use (cached prefix blocks may
// remain).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "kvengine/engine.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server {

struct TinyFiles {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The tiny model, its file and tokenizer: generated into the test temp dir and loaded once per
// process.
const TinyFiles& Tiny();

class EngineServerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kContext = 1024;

  // A fixture that needs other limits changes the options here, before anything starts.
  virtual void Configure(EngineOptions* /*engine*/, HttpServerOptions* /*http*/) {}

  void SetUp() override {
    EngineOptions o;
    o.kv.block_size = 16;
    o.kv.num_blocks = 256;
    o.kv.max_model_len = kContext;
    o.threads = 1;
    o.sched.max_num_seqs = 4;
    o.sched.max_num_batched_tokens = 64;
    o.max_queued_requests = 8;
    o.eos_token_ids = {Tiny().tokenizer->eos()};
    HttpServerOptions h;
    h.port = 0;
    h.max_body_bytes = 1 << 20;
    h.poll_interval = std::chrono::milliseconds(10);
    h.write_timeout_s = 2;
    h.limits.max_n = 4;
    Configure(&o, &h);
    context_ = o.kv.max_model_len;
    Result<std::unique_ptr<Engine>> e = Engine::Create(Tiny().model, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->Start();
    backend_ = std::make_unique<EngineBackend>(*engine_);
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(h);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    ServedModel m;
    m.name = "tiny";
    m.backend = Backend();
    m.tokenizer = Tiny().tokenizer.get();
    m.max_model_len = context_;
    server_->SetModel(m);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
  // The backend the server uses (a fixture may wrap the engine's).
  virtual InferenceBackend* Backend() { return backend_.get(); }
  void TearDown() override {
    if (server_ && engine_) ExpectNoBlocksInUse();
    if (server_) server_->Shutdown(std::chrono::milliseconds(1000));
    if (engine_) engine_->Stop();
  }

  httplib::Result Post(const std::string& path, const nlohmann::json& body) {
    return client_->Post(path.c_str(), body.dump(), "application/json");
  }
  // Sum of a per-group metric's samples.
  int64_t Metric(const std::string& name) {
    auto r = client_->Get("/metrics");
    EXPECT_TRUE(r && r->status == 200);
    const std::regex re("^kvengine:" + name + "\\{[^}]*\\} ([0-9.e+]+)$");
    int64_t sum = 0;
    std::istringstream in(r ? r->body : "");
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_match(line, m, re)) sum += int64_t(std::stod(m[1]));
    }
    return sum;
  }
  // Polls `done` every 10 ms until it holds or `timeout` passes (cancellation is asynchronous).
  static bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  // No KV block referenced (cached prefix blocks may remain), no request in the engine, no
  // handler running.
  void ExpectNoBlocksInUse() {
    int64_t used = -1;
    const bool idle = WaitFor(
        [&] {
          used = Metric("kv_blocks_used");
          return used == 0 && Metric("num_requests_running") == 0 &&
                 Metric("num_requests_waiting") == 0 && server_->in_flight() == 0;
        },
        std::chrono::milliseconds(5000));
    EXPECT_TRUE(idle) << "KV blocks still in use: " << used << ", handlers running "
                      << server_->in_flight();
  }
  std::vector<int32_t> Prompt(int n) {
    std::vector<int32_t> p = {Tiny().tokenizer->bos()};
    for (int i = 1; i < n; ++i) p.push_back(300 + (i * 37) % 200);
    return p;
  }

  int64_t context_ = 0;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace kvengine::server
