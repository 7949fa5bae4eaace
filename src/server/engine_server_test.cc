// End to end: the real Engine over the `tiny` synthetic model behind the HTTP server on
// 127.0.0.1 (an ephemeral port), driven by httplib's client and raw sockets. Every test ends by
// checking through /metrics that no KV block is left in use (cached prefix blocks may remain).
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "runtime/engine.h"
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
  void SetUp() override {
    EngineOptions o;
    o.kv.block_size = 16;
    o.kv.num_blocks = 256;
    o.kv.max_model_len = kContext;
    o.threads = 1;
    o.max_num_seqs = 4;
    o.max_num_batched_tokens = 64;
    o.max_queued_requests = 8;
    o.eos_token_ids = {Tiny().tokenizer->eos()};
    Result<std::unique_ptr<Engine>> e = Engine::Create(Tiny().model, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->Start();
    backend_ = std::make_unique<EngineBackend>(*engine_);
    HttpServerOptions h;
    h.port = 0;
    h.max_body_bytes = 1 << 20;
    h.poll_interval = milliseconds(10);
    h.write_timeout_s = 2;
    h.limits.max_n = 4;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(h);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    ServedModel m;
    m.name = "tiny";
    m.backend = backend_.get();
    m.tokenizer = Tiny().tokenizer.get();
    m.max_model_len = kContext;
    server_->SetModel(m);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
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
  void ExpectNoBlocksInUse() {
    int64_t used = -1;
    for (int i = 0; i < 300; ++i) {
      used = Metric("kv_blocks_used");
      if (used == 0 && Metric("num_requests_running") == 0 && Metric("num_requests_waiting") == 0) {
        return;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "KV blocks still in use: " << used;
  }
  std::vector<int32_t> Prompt(int n) {
    std::vector<int32_t> p = {Tiny().tokenizer->bos()};
    for (int i = 1; i < n; ++i) p.push_back(300 + (i * 37) % 200);
    return p;
  }

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

}  // namespace
}  // namespace kvengine::server
