// End to end: the real Engine over the `tiny` synthetic model behind the HTTP server
// (EngineServerTest, engine_server_fixture.h): completions, chat, the prefix cache, bad inputs,
// bounded bodies, tokenize, a burst beyond the queue. Cancellation and disconnects are
// engine_server_cancel_test.cc's.
#include <httplib.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "server/engine_server_fixture.h"
#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

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

TEST_F(EngineServerTest, BurstBeyondTheQueueKeepsServing) {
  // At least the 4 seats and the 8 the queue holds are accepted (requests a free seat awaits do
  // not count as waiting); the rest get 503 with Retry-After, and every request gets one of the
  // two.
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
  EXPECT_GE(ok, 12);
  auto r = Post("/v1/completions", {{"prompt", "after"}, {"max_tokens", 2}});
  EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace kvengine::server
