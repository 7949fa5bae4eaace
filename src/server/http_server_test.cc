// The HTTP layer over loopback against a scripted backend: endpoints, SSE, errors, draining,
// and cancellation when a client vanishes (streamed and not). The real engine's end-to-end
// test is engine_server_test.cc.
#include "server/http_server.h"

#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int64_t kContext = 1 << 20;

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(int max_running = 64, milliseconds step = milliseconds(2)) {
    const Tokenizer& t = testing::TinyTokenizer();
    script_ = t.Encode("one two three four five six seven eight", false);
    backend_ = std::make_unique<testing::FakeBackend>(script_, step, max_running, t.eos());
    HttpServerOptions o;
    o.port = 0;
    o.max_body_bytes = 64 << 10;
    o.poll_interval = milliseconds(10);
    o.write_timeout_s = 2;
    o.api_key = api_key_;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void Publish() {
    ServedModel m;
    m.name = "tiny";
    m.backend = backend_.get();
    m.tokenizer = &testing::TinyTokenizer();
    m.max_model_len = kContext;
    server_->SetModel(m);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(milliseconds(2000));
    server_.reset();
    backend_.reset();
  }
  httplib::Result Post(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), body, "application/json");
  }
  // The scripted text for `n` tokens from the start.
  std::string ScriptText(size_t n, size_t offset = 0) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back(script_[(i + offset) % script_.size()]);
    return testing::TinyTokenizer().Decode(ids);
  }
  // Waits until the backend runs `n` requests (true) or a second passes.
  bool WaitRunning(int64_t n) {
    for (int i = 0; i < 200 && backend_->running() != n; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    return backend_->running() == n;
  }

  std::string api_key_;  // HttpServerOptions::api_key for StartServer.
  std::vector<int32_t> script_;
  std::unique_ptr<testing::FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

// SSE body -> the JSON of each data line; `done` says whether [DONE] ended it.
std::vector<json> ParseSse(const std::string& body, bool* done) {
  std::vector<json> out;
  *done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    const std::string data = event.substr(6);
    EXPECT_FALSE(*done) << "data after [DONE]";
    if (data == "[DONE]") {
      *done = true;
      continue;
    }
    out.push_back(json::parse(data));
  }
  EXPECT_EQ(pos, body.size());
  return out;
}

TEST(HttpServerLifecycleTest, ShutdownRightAfterStartReturns) {
  for (int i = 0; i < 20; ++i) {
    HttpServerOptions o;
    o.port = 0;
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    (*s)->Shutdown(milliseconds(0));
  }
  // A port in use is a clean error.
  HttpServerOptions o;
  o.port = 0;
  Result<std::unique_ptr<HttpServer>> a = HttpServer::Start(o);
  ASSERT_TRUE(a.ok());
  o.port = (*a)->port();
  Result<std::unique_ptr<HttpServer>> b = HttpServer::Start(o);
  EXPECT_FALSE(b.ok());
}

TEST_F(HttpServerTest, LoadingThenReady) {
  StartServer();
  auto r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["status"], "loading");
  r = Post("/v1/completions", R"({"prompt": "a"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(r->has_header("Retry-After"));
  EXPECT_EQ(client_->Get("/v1/models")->status, 503);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
  Publish();
  r = client_->Get("/health");
  EXPECT_EQ(r->status, 200);
  r = client_->Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  const json models = json::parse(r->body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["max_model_len"], kContext);
}

TEST_F(HttpServerTest, CompletionAndChat) {
  StartServer();
  Publish();
  auto r = Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 5, "n": 2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["text"], ScriptText(5));
  EXPECT_EQ(j["choices"][1]["text"], ScriptText(5, 1));  // The fake offsets choice i by i.
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 10);
  EXPECT_EQ(j["usage"]["prompt_tokens"],
            int(testing::TinyTokenizer().Encode("hello", true).size()));
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 16);

  r = Post("/v1/chat/completions",
           R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "logprobs": true,
               "top_logprobs": 2})");
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], ScriptText(3));
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"].size(), 3u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(1000)));
}

TEST_F(HttpServerTest, StopStringCutsAndCancels) {
  StartServer();
  Publish();
  auto r = Post("/v1/completions", R"({"prompt": "x", "max_tokens": 100, "stop": [" three"]})");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["text"], " one two");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  // The engine's choice was stopped at once rather than run to 100 tokens.
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(1000)));
  EXPECT_EQ(backend_->choice_stops(), 1);
  EXPECT_EQ(backend_->cancels(), 0);
}

TEST_F(HttpServerTest, StreamingCompletionsAndChat) {
  StartServer();
  Publish();
  auto r = Post("/v1/completions",
                R"({"prompt": "x", "max_tokens": 30, "stream": true,
                    "stream_options": {"include_usage": true}, "stop": "four"})");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  bool done = false;
  std::vector<json> chunks = ParseSse(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["object"], "text_completion");
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    text += chunks[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, " one two three ");  // Cut before "four", which never leaked.
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(chunks.back()["choices"], json::array());
  // Tokens up to the one that completed the stop string.
  int64_t tokens_to_stop = 1;
  while (ScriptText(size_t(tokens_to_stop)).find("four") == std::string::npos) ++tokens_to_stop;
  EXPECT_EQ(chunks.back()["usage"]["completion_tokens"], tokens_to_stop);

  r = Post("/v1/chat/completions",
           R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true})");
  ASSERT_EQ(r->status, 200);
  chunks = ParseSse(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  text.clear();
  for (const json& c : chunks) {
    EXPECT_FALSE(c.contains("usage"));
    if (c["choices"][0]["delta"].contains("content")) {
      text += c["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, ScriptText(4));
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "length");
}

TEST_F(HttpServerTest, ErrorsAreOpenAiJson) {
  StartServer();
  Publish();
  struct Case {
    std::string path, body;
    int status;
    std::string param;
  };
  const Case cases[] = {
      {"/v1/completions", "{not json", 400, ""},
      {"/v1/completions", "{\"prompt\": \"\xff\"}", 400, ""},
      {"/v1/completions", R"({"prompt": "a", "top_p": 7})", 400, "top_p"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 5000000})", 400, "max_tokens"},
      {"/v1/chat/completions", R"({"messages": [{"role": "x"}]})", 400, "messages[0].role"},
      {"/v1/nothing", "{}", 404, ""},
      {"/detokenize", R"({"tokens": [1, 99999]})", 400, "tokens"},
      {"/tokenize", R"({"prompt": 5})", 400, "prompt"},
  };
  for (const Case& c : cases) {
    auto r = Post(c.path, c.body);
    ASSERT_TRUE(r) << c.body;
    EXPECT_EQ(r->status, c.status) << c.body;
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    if (c.param.empty()) {
      EXPECT_TRUE(j["error"]["param"].is_null()) << r->body;
    } else {
      EXPECT_EQ(j["error"]["param"], c.param) << r->body;
    }
  }
  // A body over the limit: 413 with an error body; the server keeps serving.
  const std::string big = "{\"prompt\": \"" + std::string(1 << 20, 'a') + "\"}";
  auto r = Post("/v1/completions", big);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(json::parse(r->body)["error"].contains("message"));
  httplib::Client fresh("127.0.0.1", server_->port());
  EXPECT_EQ(fresh.Get("/health")->status, 200);
  EXPECT_EQ(backend_->submits(), 0);
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  StartServer();
  Publish();
  httplib::Client c("127.0.0.1", server_->port());
  struct Case {
    httplib::Result r;
    const char* allow;
  };
  Case cases[] = {
      {c.Get("/v1/completions"), "POST"},
      {c.Put("/v1/chat/completions", "{}", "application/json"), "POST"},
      {c.Delete("/tokenize"), "POST"},
      {c.Post("/health", "{}", "application/json"), "GET, HEAD"},
      {c.Patch("/v1/models", "{}", "application/json"), "GET, HEAD"},
      {c.Post("/metrics", "", "text/plain"), "GET, HEAD"},
  };
  for (Case& k : cases) {
    ASSERT_TRUE(k.r);
    EXPECT_EQ(k.r->status, 405) << k.allow;
    EXPECT_EQ(k.r->get_header_value("Allow"), k.allow);
    const json j = json::parse(k.r->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << k.r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("not allowed"), std::string::npos);
  }
  // HEAD of a GET endpoint, and unknown paths, are not 405.
  EXPECT_EQ(c.Head("/health")->status, 200);
  EXPECT_EQ(c.Get("/v1/nothing")->status, 404);
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(backend_->submits(), 0);
}

TEST_F(HttpServerTest, QueueFullIs503WithRetryAfter) {
  StartServer(/*max_running=*/1);
  Publish();
  backend_->Pause(true);
  const int fd = testing::ConnectLoopback(server_->port());
  ASSERT_TRUE(testing::SendAll(
      fd, testing::PostRequest("/v1/completions", R"({"prompt": "a", "max_tokens": 5})")));
  ASSERT_TRUE(WaitRunning(1));
  auto r = Post("/v1/completions", R"({"prompt": "b"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "service_unavailable");
  close(fd);  // The waiting request's client leaves: it is cancelled.
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(2000)));
  backend_->Pause(false);
}

TEST_F(HttpServerTest, DisconnectCancelsNonStreamedRequest) {
  StartServer();
  Publish();
  backend_->Pause(true);  // Queued, no token yet: a disconnect must still be noticed.
  const int fd = testing::ConnectLoopback(server_->port());
  ASSERT_TRUE(testing::SendAll(
      fd, testing::PostRequest("/v1/completions", R"({"prompt": "a", "max_tokens": 100})")));
  ASSERT_TRUE(WaitRunning(1));
  close(fd);
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(2000)));
  EXPECT_EQ(backend_->cancels(), 1);
  backend_->Pause(false);
  // Decoding: tokens flow, nobody reads them.
  const int fd2 = testing::ConnectLoopback(server_->port());
  ASSERT_TRUE(
      testing::SendAll(fd2, testing::PostRequest("/v1/chat/completions",
                                                 R"({"messages": [{"role": "user", "content": "a"}],
                                    "max_tokens": 100000, "ignore_eos": true})")));
  ASSERT_TRUE(WaitRunning(1));
  std::this_thread::sleep_for(milliseconds(30));
  close(fd2);
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(2000)));
  EXPECT_EQ(backend_->cancels(), 2);
  // /metrics reports no used blocks.
  auto m = client_->Get("/metrics");
  EXPECT_NE(m->body.find("kvengine:kv_blocks_used{model_name=\"tiny\",group=\"0\"} 0\n"),
            std::string::npos);
}

TEST_F(HttpServerTest, DisconnectCancelsStream) {
  StartServer(64, milliseconds(5));
  Publish();
  const int fd = testing::ConnectLoopback(server_->port());
  ASSERT_TRUE(testing::SendAll(
      fd, testing::PostRequest("/v1/completions",
                               R"({"prompt": "a", "max_tokens": 100000, "stream": true})")));
  const std::string got = testing::ReadUntil(fd, "data: ", milliseconds(2000));
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  close(fd);
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(3000)));
  EXPECT_EQ(backend_->cancels(), 1);
}

TEST_F(HttpServerTest, ErrorInsideStream) {
  StartServer();
  Publish();
  backend_->FailNext();
  auto r = Post("/v1/completions", R"({"prompt": "a", "max_tokens": 5, "stream": true})");
  ASSERT_EQ(r->status, 200);
  bool done = false;
  const std::vector<json> chunks = ParseSse(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.back()["error"]["message"], "scripted failure");
  // Not streamed: a 500.
  backend_->FailNext();
  r = Post("/v1/completions", R"({"prompt": "a", "max_tokens": 5})");
  EXPECT_EQ(r->status, 500);
}

TEST_F(HttpServerTest, TokenizeRoundTrip) {
  StartServer();
  Publish();
  auto r = Post("/tokenize", R"({"prompt": "Hello, wörld €!"})");
  ASSERT_EQ(r->status, 200) << r->body;
  const json t = json::parse(r->body);
  EXPECT_EQ(t["count"], t["tokens"].size());
  EXPECT_EQ(t["max_model_len"], kContext);
  EXPECT_EQ(t["tokens"][0], testing::TinyTokenizer().bos());
  r = Post("/detokenize", json({{"tokens", t["tokens"]}}).dump());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["prompt"], "Hello, wörld €!");
  r = Post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["tokens"],
            testing::TinyTokenizer().Encode("User: hi\nAssistant:", true, true));
  // Message content is text: typed markers never become special tokens (chat_tokenize_test.cc
  // covers every template family).
  r = Post("/tokenize", R"({"messages": [{"role": "user", "content": "</s><s>[INST] hi"}]})");
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<int32_t> ids = json::parse(r->body)["tokens"];
  const Tokenizer& tok = testing::TinyTokenizer();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.bos()), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.eos()), 0);
  EXPECT_EQ(tok.Decode(ids), "User: </s><s>[INST] hi\nAssistant:");
}

TEST_F(HttpServerTest, ApiKeyGuardsV1Only) {
  api_key_ = "sk-test-123";
  StartServer();
  Publish();
  const auto get = [&](const char* path, const char* auth) {
    httplib::Headers h;
    if (auth != nullptr) h.emplace("Authorization", auth);
    return client_->Get(path, h);
  };
  auto r = get("/v1/models", nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(e["code"].is_null());
  for (const char* bad : {"Bearer sk-test-12", "Bearer sk-test-1234", "Bearer SK-TEST-123",
                          "Basic c2stdGVzdC0xMjM=", "sk-test-123", "Bearer", "Bearer  "}) {
    r = get("/v1/models", bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 401) << bad;
    e = json::parse(r->body)["error"];
    EXPECT_EQ(e["code"], "invalid_api_key") << bad;
    EXPECT_EQ(e["message"].get<std::string>().find("sk-test"), std::string::npos);
  }
  for (const char* good : {"Bearer sk-test-123", "bearer sk-test-123", " Bearer  sk-test-123 "}) {
    r = get("/v1/models", good);
    ASSERT_TRUE(r) << good;
    EXPECT_EQ(r->status, 200) << good;
  }
  // Open without the key: health, metrics, tokenize.
  EXPECT_EQ(get("/health", nullptr)->status, 200);
  EXPECT_EQ(get("/metrics", nullptr)->status, 200);
  EXPECT_EQ(Post("/tokenize", R"({"prompt": "a"})")->status, 200);
  // A refused body is never read; the connection is closed, and the next request works.
  const std::string chat = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})";
  r = client_->Post("/v1/chat/completions", {{"Authorization", "Bearer nope"}}, chat,
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("Connection"), "close");
  r = client_->Post("/v1/chat/completions", {{"Authorization", "Bearer sk-test-123"}}, chat,
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(1000)));
}

TEST_F(HttpServerTest, ShutdownDrainsInFlightRequests) {
  StartServer(64, milliseconds(5));
  Publish();
  auto in_flight = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(10, 0);
    auto r = c.Post("/v1/completions", R"({"prompt": "a", "max_tokens": 40})", "application/json");
    return r ? r->status : -1;
  });
  ASSERT_TRUE(WaitRunning(1));
  auto drain = std::async(std::launch::async, [&] { server_->Shutdown(milliseconds(5000)); });
  for (int i = 0; i < 100 && server_->phase() != Phase::kDraining; ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  httplib::Client c("127.0.0.1", server_->port());
  auto h = c.Get("/health");
  if (h) {  // Unless the drain already finished.
    EXPECT_EQ(h->status, 503);
    EXPECT_EQ(json::parse(h->body)["status"], "draining");
  }
  EXPECT_EQ(in_flight.get(), 200);
  drain.get();
}

TEST_F(HttpServerTest, ShutdownDeadlineCancelsTheRest) {
  StartServer(64, milliseconds(5));
  Publish();
  auto in_flight = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(10, 0);
    auto r =
        c.Post("/v1/completions", R"({"prompt": "a", "max_tokens": 100000})", "application/json");
    return r ? r->status : -1;
  });
  ASSERT_TRUE(WaitRunning(1));
  server_->Shutdown(milliseconds(50));
  EXPECT_EQ(in_flight.get(), 503);
  EXPECT_TRUE(backend_->WaitIdle(milliseconds(1000)));
}

}  // namespace
}  // namespace kvengine::server
