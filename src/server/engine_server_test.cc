// End to end: the real Engine over the `tiny` synthetic model behind the HTTP server on
// 127.0.0.1 (an ephemeral port), driven by httplib's client and raw sockets. Every test ends by
// checking through /metrics that no KV block is left in use (cached prefix blocks may remain).
#include <httplib.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/model.h"
#include "kvengine/engine.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "server/server_test_util.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int64_t kContext = 1024;

struct TinyFiles {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

const TinyFiles& Tiny() {
  static const TinyFiles* t = [] {
    auto* files = new TinyFiles;
    Result<SyntheticModelSpec> spec = FindSyntheticPreset("tiny");
    KV_CHECK(spec.ok());
    const std::string dir =
        (std::filesystem::path(::testing::TempDir()) / "kvengine_server_test").string();
    Result<std::string> path = EnsureSyntheticModel(*spec, dir);
    KV_CHECK(path.ok()) << path.status().ToString();
    Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(*path);
    KV_CHECK(file.ok());
    files->file = std::shared_ptr<const GgufFile>(std::move(file).value());
    Result<std::unique_ptr<Model>> model = LoadModel(files->file, "tiny");
    KV_CHECK(model.ok()) << model.status().ToString();
    files->model = std::shared_ptr<const Model>(std::move(model).value());
    Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*files->file);
    KV_CHECK(tok.ok());
    files->tokenizer = std::move(tok).value();
    return files;
  }();
  return *t;
}

class EngineServerTest : public ::testing::Test {
 protected:
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
    h.poll_interval = milliseconds(10);
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
    if (server_) server_->Shutdown(milliseconds(1000));
    if (engine_) engine_->Stop();
  }

  httplib::Result Post(const std::string& path, const json& body) {
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
  static bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(10));
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
        milliseconds(5000));
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

TEST_F(EngineServerTest, GreedyCompletionMatchesTokenizerAndUsage) {
  const json req = {
      {"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
  auto r = Post("/v1/completions", req);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json a = json::parse(r->body);
  EXPECT_EQ(a["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(a["usage"]["completion_tokens"], 8);
  const int prompt_tokens = int(Tiny().tokenizer->Encode("Once upon a time", true).size());
  EXPECT_EQ(a["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(a["usage"]["total_tokens"], prompt_tokens + 8);
  // Greedy is deterministic: the same text again, and the same as streaming it.
  r = Post("/v1/completions", req);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], a["choices"][0]["text"]);
  json sreq = req;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  r = Post("/v1/completions", sreq);
  ASSERT_EQ(r->status, 200);
  std::string text;
  bool done = false;
  json usage;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    if (line == "data: [DONE]") {
      done = true;
      continue;
    }
    const json c = json::parse(line.substr(6));
    if (!c["choices"].empty()) text += c["choices"][0]["text"].get<std::string>();
    if (c.contains("usage") && !c["usage"].is_null()) usage = c["usage"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text, a["choices"][0]["text"]);
  EXPECT_EQ(usage["completion_tokens"], 8);
}

TEST_F(EngineServerTest, PrefixCacheReportsCachedTokens) {
  const json req = {{"prompt", Prompt(70)}, {"max_tokens", 2}, {"temperature", 0}};
  auto r = Post("/v1/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  r = Post("/v1/completions", req);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 64);
  EXPECT_GE(Metric("prefix_cache_hits_total"), 64);
  EXPECT_LT(Metric("prompt_tokens_computed_total"), Metric("prompt_tokens_total"));
}

TEST_F(EngineServerTest, ChatNAndLogprobs) {
  auto r = Post(
      "/v1/chat/completions",
      {{"messages",
        {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
       {"max_tokens", 5},
       {"n", 2},
       {"seed", 3},
       {"logprobs", true},
       {"top_logprobs", 2},
       {"ignore_eos", true}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  for (const json& c : j["choices"]) {
    EXPECT_EQ(c["message"]["role"], "assistant");
    EXPECT_EQ(c["logprobs"]["content"].size(), 5u);
    EXPECT_EQ(c["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
    EXPECT_LE(c["logprobs"]["content"][0]["logprob"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 10);
}

TEST_F(EngineServerTest, BadInputs) {
  const json too_long = {{"prompt", Prompt(int(kContext))}};
  const json over = {{"prompt", Prompt(int(kContext) + 5)}};
  const json fits = {{"prompt", Prompt(int(kContext) - 1)}, {"max_tokens", 1}};
  struct Case {
    std::string path;
    std::string body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", too_long.dump(), 400, "prompt"},
      {"/v1/completions", over.dump(), 400, "prompt"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 5000})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": [1, 5000]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": ""})", 200, ""},  // BOS alone is a valid prompt.
      {"/v1/completions", R"({"prompt": "a", "n": 5})", 400, "n"},
      {"/v1/completions", R"({"prompt": "a", "temperature": -1})", 400, "temperature"},
      {"/v1/completions", "{\"prompt\": \"\xc3\x28\"}", 400, ""},
      {"/v1/completions", "not json", 400, ""},
      {"/v1/completions", fits.dump(), 200, ""},
  };
  for (const Case& c : cases) {
    auto r = client_->Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status) << c.body.substr(0, 80) << " -> " << r->body;
    if (c.status == 400) {
      const json j = json::parse(r->body);
      if (c.param.empty()) {
        EXPECT_TRUE(j["error"]["param"].is_null()) << r->body;
      } else {
        EXPECT_EQ(j["error"]["param"], c.param) << r->body;
      }
    }
  }
  // 2 MiB body against a 1 MiB limit.
  auto r = client_->Post("/v1/completions", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

// Peak resident memory of this process in KiB (VmHWM); -1 if unknown.
int64_t PeakRssKb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}
// Resets the peak to the current resident size and returns it; -1 where the kernel does not
// allow the reset (then the peak says nothing about what follows).
int64_t ResetPeakRssKb() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  return clear ? PeakRssKb() : -1;
}

// Regression: httplib bounds only Content-Length bodies. A chunked body was read into memory
// whatever its size, and a compressed one (Content-Encoding: gzip) was inflated without bound:
// 2 MB of gzip became 500 MB in the server. Now every request's reads are bounded, compressed
// bodies are refused unread, and the connection is closed after either answer.
TEST_F(EngineServerTest, BodiesAreBoundedWhateverTheirFraming) {
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  // Chunked within the limit is served.
  {
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    std::string body = head + "Transfer-Encoding: chunked\r\n\r\n";
    for (const std::string piece : {"{\"prompt\":", " \"hi\", \"max_tokens\"", ": 2}"}) {
      body += fmt::format("{:x}\r\n{}\r\n", piece.size(), piece);
    }
    ASSERT_TRUE(testing::SendAll(fd, body + "0\r\n\r\n"));
    const std::string answer = testing::ReadUntil(fd, "\"usage\"", milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    close(fd);
  }
  // 64 MiB chunked against the 1 MiB limit: 413, without the server holding it in memory.
  {
    const int64_t peak_before = ResetPeakRssKb();
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    bool sent_all = testing::SendAll(fd, head + "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 1024 && sent_all; ++i) sent_all = testing::SendAll(fd, chunk);
    if (sent_all) testing::SendAll(fd, "0\r\n\r\n");  // Else the server closed first: fine.
    const std::string answer = testing::ReadUntil(fd, "\x01", milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 300);
    EXPECT_NE(answer.find("larger than the server's limit"), std::string::npos) << answer;
    close(fd);
    if (peak_before > 0) {
      EXPECT_LT(PeakRssKb() - peak_before, 32 << 10) << "KiB more at the peak";
    }
  }
  // A compressed body is refused before it is read (these bytes are not even gzip).
  {
    const std::string body(4096, 'x');
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(testing::SendAll(fd, head + "Content-Encoding: gzip\r\nContent-Length: " +
                                         std::to_string(body.size()) + "\r\n\r\n" + body));
    const std::string answer = testing::ReadUntil(fd, "\x01", milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 415", 0), 0u) << answer.substr(0, 300);
    EXPECT_NE(answer.find("Content-Encoding gzip is not supported"), std::string::npos) << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
    close(fd);
  }
  // A body without a length (read to EOF by httplib) and an endless request line: bounded too.
  {
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    bool sent_all = testing::SendAll(fd, head + "\r\n");
    const std::string block(1 << 20, ' ');
    for (int i = 0; i < 8 && sent_all; ++i) sent_all = testing::SendAll(fd, block);
    const std::string answer = testing::ReadUntil(fd, "\x01", milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 300);
    close(fd);
  }
  {
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    bool sent_all = testing::SendAll(fd, "GET /");
    const std::string block(1 << 20, 'a');
    for (int i = 0; i < 8 && sent_all; ++i) sent_all = testing::SendAll(fd, block);
    // No answer to a request that never ends its line; the connection is just closed.
    EXPECT_EQ(testing::ReadUntil(fd, "\x01", milliseconds(10000)), "");
    close(fd);
  }
  auto r = Post("/v1/completions", {{"prompt", "after"}, {"max_tokens", 2}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(EngineServerTest, TokenizeRoundTrip) {
  auto r = Post("/tokenize", {{"prompt", "The quick brown fox, naïve café!"}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json t = json::parse(r->body);
  r = Post("/detokenize", {{"tokens", t["tokens"]}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["prompt"], "The quick brown fox, naïve café!");
}

TEST_F(EngineServerTest, DisconnectCancelsNonStreamedAndStreamed) {
  for (bool stream : {false, true}) {
    const json req = {{"prompt", Prompt(40)},
                      {"max_tokens", kContext - 40},
                      {"ignore_eos", true},
                      {"stream", stream}};
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(testing::SendAll(fd, testing::PostRequest("/v1/completions", req.dump())));
    // Wait until it decodes (streamed: the first chunk; not streamed: tokens counted).
    if (stream) {
      EXPECT_NE(testing::ReadUntil(fd, "data: ", milliseconds(5000)).find("data: "),
                std::string::npos);
    } else {
      for (int i = 0; i < 500 && Metric("generation_tokens_total") == 0; ++i) {
        std::this_thread::sleep_for(milliseconds(5));
      }
    }
    EXPECT_GT(Metric("kv_blocks_used"), 0);
    close(fd);
    ExpectNoBlocksInUse();
  }
  EXPECT_GE(Metric("request_cancelled_total"), 2);
}

TEST_F(EngineServerTest, BurstBeyondTheQueueKeepsServing) {
  // At least the 8 the queue holds are accepted (4 more once the loop has admitted some);
  // the rest get 503 with Retry-After, and every request gets one of the two.
  std::vector<std::future<int>> results;
  for (int i = 0; i < 24; ++i) {
    results.push_back(std::async(std::launch::async, [this, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(60, 0);
      const json req = {{"prompt", Prompt(20 + i)}, {"max_tokens", 16}, {"ignore_eos", true}};
      auto r = c.Post("/v1/completions", req.dump(), "application/json");
      if (r && r->status == 503) {
        EXPECT_TRUE(r->has_header("Retry-After"));
      }
      if (!r) ADD_FAILURE() << "request " << i << ": " << httplib::to_string(r.error());
      return r ? r->status : -1;
    }));
  }
  int ok = 0, busy = 0;
  for (auto& f : results) {
    const int s = f.get();
    ok += s == 200;
    busy += s == 503;
    if (s != 200 && s != 503) ADD_FAILURE() << "status " << s;
  }
  EXPECT_EQ(ok + busy, 24);
  EXPECT_GE(ok, 8);
  auto r = Post("/v1/completions", {{"prompt", "after"}, {"max_tokens", 2}});
  EXPECT_EQ(r->status, 200);
}

// Forwards to the engine but delivers every Cancel twice, as when the server cancels a request
// (a stop string, the drain deadline) at the moment its client disconnects; counts the final
// events of every request.
class DoubleCancelBackend : public InferenceBackend {
 public:
  explicit DoubleCancelBackend(Engine& engine) : engine_(engine) {}

  Result<RequestId> Submit(RequestParams params, EventCallback on_event) override {
    return engine_.Submit(std::move(params), [this, on_event](const RequestEvent& e) {
      if (e.finish_reason != FinishReason::kNone) {
        std::lock_guard<std::mutex> lock(mu_);
        ++finals_[{e.id, e.choice}];
        if (e.finish_reason == FinishReason::kCancelled) cancelled_ids_.insert(e.id);
      }
      on_event(e);
    });
  }
  void Cancel(RequestId id) override {
    cancels_.fetch_add(1);
    engine_.Cancel(id);
    engine_.Cancel(id);
  }
  void StopChoice(RequestId id, int choice) override {
    engine_.StopChoice(id, choice);
    engine_.StopChoice(id, choice);
  }
  EngineStats Stats() const override { return engine_.Stats(); }

  int64_t cancels() const { return cancels_.load(); }
  // Final events per (request, choice).
  std::map<std::pair<RequestId, int>, int> finals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return finals_;
  }
  size_t cancelled_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_ids_.size();
  }

 private:
  Engine& engine_;
  mutable std::mutex mu_;
  std::map<std::pair<RequestId, int>, int> finals_;
  std::set<RequestId> cancelled_ids_;
  std::atomic<int64_t> cancels_{0};
};

class DoubleCancelServerTest : public EngineServerTest {
 protected:
  InferenceBackend* Backend() override {
    double_ = std::make_unique<DoubleCancelBackend>(*engine_);
    return double_.get();
  }
  std::unique_ptr<DoubleCancelBackend> double_;  // Destroyed after TearDown stopped the engine.
};

TEST_F(DoubleCancelServerTest, EveryCancelTwiceStillEndsEachChoiceOnce) {
  const int64_t cancelled_before = Metric("request_cancelled_total");
  // 1. Stop strings: the server stops each choice in the engine (StopChoice, delivered twice
  //    too). A greedy run gives the text; a piece of it is the stop string of the same run
  //    again, with both choices.
  const json greedy = {
      {"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  auto r = Post("/v1/completions", greedy);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string text = json::parse(r->body)["choices"][0]["text"];
  ASSERT_GE(text.size(), 12u) << text;
  json stopped = greedy;
  stopped["max_tokens"] = 400;
  stopped["n"] = 2;
  stopped["stop"] = text.substr(8, 3);
  for (bool stream : {false, true}) {
    stopped["stream"] = stream;
    r = Post("/v1/completions", stopped);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->body.find("\"finish_reason\":\"stop\""), std::string::npos) << r->body;
  }
  // 2. Disconnects mid-stream and while waiting for a non-streamed answer.
  for (bool stream : {false, true}) {
    const json req = {{"prompt", Prompt(40)},
                      {"max_tokens", kContext - 40},
                      {"ignore_eos", true},
                      {"stream", stream}};
    const int64_t generated = Metric("generation_tokens_total");
    const int fd = testing::ConnectLoopback(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(testing::SendAll(fd, testing::PostRequest("/v1/completions", req.dump())));
    ASSERT_TRUE(
        WaitFor([&] { return Metric("generation_tokens_total") > generated; }, milliseconds(5000)));
    close(fd);
    ExpectNoBlocksInUse();
  }
  ExpectNoBlocksInUse();
  // The two disconnected requests cancelled, each once, though every Cancel reached the engine
  // twice; the stop-string requests ended by stop, not cancelled.
  EXPECT_GE(double_->cancels(), 2);
  EXPECT_EQ(double_->cancelled_requests(), 2u);
  EXPECT_EQ(Metric("request_cancelled_total"), cancelled_before + 2);
  for (const auto& [key, count] : double_->finals()) {
    EXPECT_EQ(count, 1) << "request " << key.first << " choice " << key.second;
  }
  r = Post("/v1/completions", {{"prompt", "after"}, {"max_tokens", 2}});
  EXPECT_EQ(r->status, 200);
}

// Requests that last seconds on the tiny model: with a 32k-token context each decode step
// attends over thousands of positions, so running requests keep their seats long enough for
// another to wait behind them, and a long prompt's prefill spans hundreds of steps.
class LongRequestServerTest : public EngineServerTest {
 protected:
  static constexpr int64_t kLongContext = 32768;

  void Configure(EngineOptions* o, HttpServerOptions* h) override {
    o->kv.max_model_len = kLongContext;
    // Every seat can reach the full context, plus one more sequence: no preemption.
    o->kv.num_blocks = int32_t((o->sched.max_num_seqs + 1) * kLongContext / o->kv.block_size);
    h->max_body_bytes = 4 << 20;
    h->write_timeout_s = 1;
  }
  // Sends a request on a new connection and returns it (the caller closes it).
  int Send(const json& req, int receive_buffer_bytes = 0) {
    const int fd = testing::ConnectLoopback(server_->port(), receive_buffer_bytes);
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(testing::SendAll(fd, testing::PostRequest("/v1/completions", req.dump())));
    return fd;
  }
  // A request that generates until the context is full.
  json Endless(int salt, bool stream) {
    return {{"prompt", Prompt(8 + salt)},
            {"max_tokens", kLongContext - 8 - salt},
            {"ignore_eos", true},
            {"stream", stream}};
  }
};

TEST_F(LongRequestServerTest, DisconnectWhileQueuedCancelsItInTheQueue) {
  // Four endless requests take the four seats (max_num_seqs).
  std::vector<int> seats;
  for (int i = 0; i < 4; ++i) seats.push_back(Send(Endless(i, /*stream=*/false)));
  ASSERT_TRUE(WaitFor([&] { return Metric("num_requests_running") == 4; }, milliseconds(10000)));
  for (bool stream : {false, true}) {
    const int64_t cancelled = Metric("request_cancelled_total");
    const int64_t finished = Metric("request_success_total");
    const int fd = Send({{"prompt", Prompt(20)}, {"max_tokens", 8}, {"stream", stream}});
    ASSERT_TRUE(WaitFor([&] { return Metric("num_requests_waiting") == 1; }, milliseconds(5000)));
    close(fd);
    ASSERT_TRUE(WaitFor([&] { return Metric("request_cancelled_total") == cancelled + 1; },
                        milliseconds(5000)));
    // It left the queue cancelled, while the seats it waited for were still taken.
    EXPECT_EQ(Metric("num_requests_waiting"), 0);
    EXPECT_EQ(Metric("request_success_total"), finished);
    EXPECT_EQ(Metric("num_requests_running"), 4);
  }
  for (int fd : seats) close(fd);
}

TEST_F(LongRequestServerTest, DisconnectDuringPrefillFreesItsBlocks) {
  const int64_t generated = Metric("generation_tokens_total");
  const int64_t cancelled = Metric("request_cancelled_total");
  // 30000 prompt tokens at 64 a step: the prefill takes hundreds of steps.
  const int fd = Send({{"prompt", Prompt(30000)}, {"max_tokens", 16}, {"stream", true}});
  ASSERT_TRUE(WaitFor([&] { return Metric("kv_blocks_used") >= 16; }, milliseconds(10000)));
  EXPECT_EQ(Metric("generation_tokens_total"), generated);  // Still prefilling.
  close(fd);
  ExpectNoBlocksInUse();
  EXPECT_EQ(Metric("request_cancelled_total"), cancelled + 1);
  EXPECT_EQ(Metric("generation_tokens_total"), generated);  // It never decoded.
}

TEST_F(LongRequestServerTest, StalledReaderIsDroppedAfterTheWriteTimeout) {
  // A client that reads the first chunk, then nothing, and keeps the connection open: once the
  // socket buffers are full the server's write waits write_timeout_s (1 s), then the server
  // drops the connection and cancels the request. Logprobs make the chunks large.
  const int64_t cancelled = Metric("request_cancelled_total");
  json req = Endless(0, /*stream=*/true);
  req["logprobs"] = 5;
  req["n"] = 4;
  const int fd = Send(req, /*receive_buffer_bytes=*/4096);
  ASSERT_NE(testing::ReadUntil(fd, "data: ", milliseconds(5000)).find("data: "), std::string::npos);
  // Meanwhile the server serves others.
  auto r = Post("/v1/completions", {{"prompt", "meanwhile"}, {"max_tokens", 4}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(WaitFor([&] { return Metric("request_cancelled_total") == cancelled + 1; },
                      milliseconds(30000)));
  ExpectNoBlocksInUse();  // Handler gone too, with the client still connected.
  close(fd);
}

}  // namespace
}  // namespace kvengine::server
