// Soak (label soak; scripts/test.sh runs it in the sanitizer build too): for
// KVENGINE_SOAK_SECONDS (default 20, at most 60) 128 clients on loopback keep requests going
// against the real engine on the `tiny` model, so 100+ are in flight at once, with 16 decoding
// and a queue that overflows into 503s. Most requests stream; each one's fate is drawn at
// random: read to the end, disconnect right after sending (while queued), disconnect after a
// random part of the answer (mid-stream), or hit a stop string (the server cancels). Prompts
// share a few long prefixes, so prefix-cache hits, shared blocks and preemption (the pool holds
// 2048 tokens for 16 sequences) all happen among the cancellations. Every answer must be well
// formed; afterwards no KV block is in use beyond the prefix cache, no request or handler is
// left, and the server still answers.
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "kvengine/engine.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "server/server_test_util.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kClients = 128;
constexpr int kMaxNumSeqs = 16;
constexpr int kMaxQueued = 96;  // 128 clients overflow it: some requests get 503.
constexpr int64_t kContext = 512;
constexpr int kMinInFlightPeak = 100;

int SoakSeconds() {
  const char* env = std::getenv("KVENGINE_SOAK_SECONDS");
  const int s = env != nullptr ? std::atoi(env) : 20;
  return std::clamp(s, 1, 60);
}

int64_t SumMetric(const std::string& body, const std::string& name) {
  const std::regex re("^kvengine:" + name + "\\{[^}]*\\} ([0-9.e+]+)$");
  int64_t sum = 0;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) sum += int64_t(std::stod(m[1]));
  }
  return sum;
}

// A raw HTTP/1.1 response read to its end (the requests say Connection: close).
struct RawResponse {
  int status = 0;
  std::string headers;
  std::string body;  // De-chunked when the response was chunked.
  bool complete = false;
};

RawResponse ParseResponse(const std::string& raw) {
  RawResponse r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + 9);
  r.headers = raw.substr(0, head_end);
  const std::string rest = raw.substr(head_end + 4);
  if (r.headers.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = rest;
    r.complete = true;
    return r;
  }
  size_t pos = 0;
  while (true) {
    const size_t eol = rest.find("\r\n", pos);
    if (eol == std::string::npos) return r;
    const size_t size = std::strtoul(rest.c_str() + pos, nullptr, 16);
    if (size == 0) break;
    if (eol + 2 + size + 2 > rest.size()) return r;
    r.body.append(rest, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  r.complete = true;
  return r;
}

// Checks a finished SSE stream: JSON chunks, no error event, one finish_reason per choice,
// usage when asked, [DONE] last. Returns an empty string when it is well formed.
std::string CheckStream(const std::string& body, int n, int64_t max_tokens, bool usage_asked) {
  std::vector<int> finishes(size_t(n), 0);
  bool done = false, usage_seen = false;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) return "an unterminated event";
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.rfind("data: ", 0) != 0) return "not an SSE data line: " + event;
    if (done) return "an event after [DONE]";
    if (event == "data: [DONE]") {
      done = true;
      continue;
    }
    const json c = json::parse(event.substr(6), nullptr, /*allow_exceptions=*/false);
    if (c.is_discarded()) return "not JSON: " + event;
    if (c.contains("error")) return "an error event: " + event;
    for (const json& ch : c.value("choices", json::array())) {
      const int index = ch.value("index", -1);
      if (index < 0 || index >= n) return "a bad choice index: " + event;
      if (ch.contains("finish_reason") && !ch["finish_reason"].is_null()) ++finishes[size_t(index)];
    }
    if (c.contains("usage") && !c["usage"].is_null()) {
      usage_seen = true;
      if (c["usage"].value("completion_tokens", int64_t{-1}) > n * max_tokens) {
        return "usage beyond max_tokens: " + event;
      }
    }
  }
  if (!done) return "no [DONE]";
  for (int f : finishes) {
    if (f != 1) return "a choice without exactly one finish_reason";
  }
  if (usage_asked && !usage_seen) return "no usage chunk";
  return "";
}

enum class Fate { kComplete, kDropQueued, kDropMidStream };

struct Outcomes {
  std::atomic<int64_t> completed{0}, refused{0}, dropped{0}, malformed{0};
};

// One request with random parameters and a random fate.
void OneRequest(int port, std::mt19937& rng, Outcomes& out) {
  static const char* const kPrefixes[] = {
      "Once upon a time, in a land far away, there lived a curious little fox who ",
      "The quick brown fox jumps over the lazy dog while the cat watches from the wall and ",
      "In the beginning the engine had no cache at all, and every prompt was computed again; ",
      "Tom and Lily went to the park with their dog. The sun was shining and the birds "};
  const bool chat = rng() % 4 == 0;
  const bool stream = rng() % 10 != 0;
  const int n = rng() % 5 == 0 ? 2 : 1;
  const int64_t max_tokens = 8 + int64_t(rng() % 193);
  const bool usage = stream && rng() % 2 == 0;
  const std::string text =
      std::string(kPrefixes[rng() % 4]) + "story " + std::to_string(rng() % 1000);
  json req = {{"max_tokens", max_tokens}, {"n", n}, {"stream", stream}, {"ignore_eos", true}};
  if (chat) {
    req["messages"] = {{{"role", "user"}, {"content", text}}};
  } else {
    req["prompt"] = text;
  }
  if (rng() % 4 == 0) req["stop"] = std::string(1, "etao "[rng() % 5]);  // Server-side cancel.
  if (usage) req["stream_options"] = {{"include_usage", true}};
  const uint32_t r = rng() % 10;
  const Fate fate = r < 6 ? Fate::kComplete : r < 7 ? Fate::kDropQueued : Fate::kDropMidStream;

  const int fd = testing::ConnectLoopback(port);
  if (fd < 0) {
    ADD_FAILURE() << "connect failed";
    return;
  }
  const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
  if (!testing::SendAll(fd, testing::PostRequest(path, req.dump()))) {
    close(fd);
    ADD_FAILURE() << "send failed";
    return;
  }
  switch (fate) {
    case Fate::kDropQueued:
      close(fd);
      ++out.dropped;
      return;
    case Fate::kDropMidStream:
      // A random number of bytes into the answer (headers included), then gone.
      testing::ReadUntil(fd, std::string(64, '#'), milliseconds(1 + rng() % 300));
      close(fd);
      ++out.dropped;
      return;
    case Fate::kComplete:
      break;
  }
  // Connection: close, so the answer ends with EOF; "\x01" never appears.
  const RawResponse resp =
      ParseResponse(testing::ReadUntil(fd, std::string(1, '\x01'), milliseconds(60000)));
  close(fd);
  if (resp.status == 503 && resp.headers.find("Retry-After:") != std::string::npos) {
    ++out.refused;
    // Back off a little, as clients honouring Retry-After do, rather than spin on 503s.
    std::this_thread::sleep_for(milliseconds(20 + rng() % 100));
    return;
  }
  std::string problem;
  if (resp.status != 200 || !resp.complete) {
    problem = "status " + std::to_string(resp.status) + (resp.complete ? "" : " (cut short)");
  } else if (stream) {
    problem = CheckStream(resp.body, n, max_tokens, usage);
  } else {
    const json j = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || j["choices"].size() != size_t(n)) problem = "a bad JSON answer";
  }
  if (problem.empty()) {
    ++out.completed;
  } else {
    ++out.malformed;
    ADD_FAILURE() << path << " " << req.dump() << ": " << problem << "\n"
                  << resp.headers << "\n"
                  << resp.body.substr(0, 600);
  }
}

TEST(ServerSoakTest, ManyStreamsWithRandomDisconnects) {
  Result<SyntheticModelSpec> spec = FindSyntheticPreset("tiny");
  ASSERT_TRUE(spec.ok());
  Result<std::string> path = EnsureSyntheticModel(
      *spec, (std::filesystem::path(::testing::TempDir()) / "kvengine_server_soak").string());
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(*path);
  ASSERT_TRUE(file.ok());
  std::shared_ptr<const GgufFile> gguf(std::move(file).value());
  Result<std::unique_ptr<Model>> model = LoadModel(gguf, "tiny");
  ASSERT_TRUE(model.ok());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tokenizer.ok());

  EngineOptions o;
  o.kv.block_size = 16;
  o.kv.num_blocks = 128;  // 2048 tokens for 16 sequences: preemption under load.
  o.kv.max_model_len = kContext;
  o.threads = 1;
  o.sched.max_num_seqs = kMaxNumSeqs;
  o.sched.max_num_batched_tokens = 128;
  o.max_queued_requests = kMaxQueued;
  o.eos_token_ids = {(*tokenizer)->eos()};
  Result<std::unique_ptr<Engine>> engine =
      Engine::Create(std::shared_ptr<const Model>(std::move(model).value()), o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  (*engine)->Start();
  EngineBackend backend(**engine);
  HttpServerOptions h;
  h.port = 0;
  h.max_threads = kClients + 64;
  h.poll_interval = milliseconds(20);
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(h);
  ASSERT_TRUE(server.ok());
  ServedModel m;
  m.name = "tiny";
  m.backend = &backend;
  m.tokenizer = tokenizer->get();
  m.max_model_len = kContext;
  (*server)->SetModel(m);
  const int port = (*server)->port();

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(SoakSeconds());
  Outcomes out;
  std::atomic<bool> clients_done{false};
  std::atomic<int64_t> peak{0};
  std::thread sampler([&] {
    while (!clients_done) {
      peak = std::max(peak.load(), (*server)->in_flight());
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      std::mt19937 rng{uint32_t(i) * 7919u + 1u};
      while (Clock::now() < deadline) OneRequest(port, rng, out);
    });
  }
  for (std::thread& t : clients) t.join();
  clients_done = true;
  sampler.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(out.malformed.load(), 0);
  EXPECT_GT(out.completed.load(), kClients);
  EXPECT_GT(out.dropped.load(), kClients / 4);
  EXPECT_GE(peak.load(), kMinInFlightPeak);

  httplib::Client c("127.0.0.1", port);
  std::string metrics;
  int64_t left = -1;
  for (int i = 0; i < 1000 && left != 0; ++i) {
    if (i > 0) std::this_thread::sleep_for(milliseconds(10));
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r);
    metrics = r->body;
    left = SumMetric(metrics, "kv_blocks_used") + SumMetric(metrics, "num_requests_running") +
           SumMetric(metrics, "num_requests_waiting") + (*server)->in_flight();
  }
  EXPECT_EQ(left, 0) << metrics;
  const int64_t total = out.completed + out.refused + out.dropped + out.malformed;
  std::printf(
      "soak: %.1f s, %lld requests: %lld completed, %lld refused (503), %lld dropped; peak %lld "
      "in flight; engine: %lld cancelled, %lld preemptions, %lld prefix-cache hit tokens\n",
      seconds, static_cast<long long>(total), static_cast<long long>(out.completed.load()),
      static_cast<long long>(out.refused.load()), static_cast<long long>(out.dropped.load()),
      static_cast<long long>(peak.load()),
      static_cast<long long>(SumMetric(metrics, "request_cancelled_total")),
      static_cast<long long>(SumMetric(metrics, "num_preemptions_total")),
      static_cast<long long>(SumMetric(metrics, "prefix_cache_hits_total")));
  EXPECT_GT(SumMetric(metrics, "request_cancelled_total"), 0);
  EXPECT_GT(SumMetric(metrics, "prefix_cache_hits_total"), 0);
  // Only these answers were ever given: 200, 503 (queue full) and 499 (client gone, never sent).
  const std::regex code_re("^kvengine:http_responses_total\\{[^}]*code=\"([0-9]+)\"\\}");
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    std::smatch mm;
    if (!std::regex_search(line, mm, code_re)) continue;
    const std::string code = mm[1];
    EXPECT_TRUE(code == "200" || code == "503" || code == "499") << line;
  }
  auto r =
      c.Post("/v1/completions", R"({"prompt": "still here", "max_tokens": 4})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  (*server)->Shutdown(milliseconds(2000));
  (*engine)->Stop();
}

}  // namespace
}  // namespace kvengine::server
