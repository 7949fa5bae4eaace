// The load client and RunBenchServe against a scripted OpenAI-style server on 127.0.0.1: it
// answers every streamed completion with max_tokens chunks of known token ids, so the tests
// can check what the client sent (multi-turn histories), how many requests were in flight, and
// what it made of the answers and of /metrics.
#include "bench/serve/load_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/serve/bench_serve.h"

namespace kvengine::loadgen {
namespace {

using nlohmann::json;

constexpr int64_t kFailingMaxTokens = 13;  // The fake answers 503 to requests asking for this.

// The ids the fake generates: 100, 101, ...
std::vector<int32_t> FakeOutput(int64_t n) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(int32_t(100 + i));
  return out;
}

class FakeServer {
 public:
  explicit FakeServer(std::chrono::milliseconds delay) : delay_(delay) {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object": "list", "data": [{"id": "fake", "max_model_len": 512,
                          "vocab_size": 512}]})",
                      "application/json");
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      res.set_content("kvengine:prefix_cache_queries_total{model_name=\"fake\"} " +
                          std::to_string(queried_) +
                          "\nkvengine:prefix_cache_hits_total{model_name=\"fake\"} " +
                          std::to_string(queried_ / 4) +
                          "\nkvengine:kv_cache_usage_perc{model_name=\"fake\"} 0.5\n",
                      "text/plain");
    });
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      Complete(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::vector<int32_t>> prompts() {
    std::lock_guard<std::mutex> lock(mu_);
    return prompts_;
  }
  int peak_in_flight() const { return peak_; }

 private:
  void Complete(const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body);
    const int64_t max_tokens = body["max_tokens"].get<int64_t>();
    EXPECT_TRUE(body["stream"].get<bool>());
    EXPECT_TRUE(body["return_token_ids"].get<bool>());
    EXPECT_TRUE(body["ignore_eos"].get<bool>());
    const int now = ++in_flight_;
    for (int p = peak_.load(); now > p && !peak_.compare_exchange_weak(p, now);) {
    }
    std::this_thread::sleep_for(delay_);
    --in_flight_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      prompts_.push_back(body["prompt"].get<std::vector<int32_t>>());
      queried_ += int64_t(prompts_.back().size());
    }
    if (max_tokens == kFailingMaxTokens) {
      res.status = 503;
      res.set_content(R"({"error": {"message": "queue full", "type": "x"}})", "application/json");
      return;
    }
    std::string sse;
    for (int32_t id : FakeOutput(max_tokens)) {
      sse += "data: " + json({{"choices", {{{"text", "t"}, {"token_ids", {id}}}}}}).dump() + "\n\n";
    }
    sse += "data: " +
           json({{"choices", json::array()},
                 {"usage",
                  {{"completion_tokens", max_tokens},
                   {"prompt_tokens_details", {{"cached_tokens", 2}}}}}})
               .dump() +
           "\n\ndata: [DONE]\n\n";
    res.set_content(sse, "text/event-stream");
  }

  const std::chrono::milliseconds delay_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> in_flight_{0}, peak_{0};
  std::mutex mu_;
  std::vector<std::vector<int32_t>> prompts_;
  int64_t queried_ = 0;
};

Turn MakeTurn(std::vector<int32_t> message, int64_t max_tokens) {
  Turn t;
  t.message = std::move(message);
  t.max_tokens = max_tokens;
  t.planned_output = std::vector<int32_t>(size_t(max_tokens), 9);
  return t;
}

TEST(LoadClientTest, MultiTurnHistoriesCarryTheGeneratedTokens) {
  FakeServer server(std::chrono::milliseconds(1));
  const std::vector<Conversation> convs = {
      {{MakeTurn({1, 2}, 3), MakeTurn({3}, 2), MakeTurn({4, 5}, 1)}},
      {{MakeTurn({6}, 2), MakeTurn({7}, 4)}},
  };
  LoadOptions o;
  o.model = "fake";
  int64_t last_done = 0, last_total = 0;
  const LoadResult r = RunLoad(*ParseBaseUrl(server.url()), convs, o,
                               std::chrono::steady_clock::now(), [&](int64_t d, int64_t t) {
                                 EXPECT_EQ(d, last_done + 1);
                                 last_done = d;
                                 last_total = t;
                               });
  EXPECT_EQ(last_done, 5);
  EXPECT_EQ(last_total, 5);
  ASSERT_EQ(r.records.size(), 5u);
  for (const RequestRecord& rec : r.records) {
    EXPECT_TRUE(rec.ok) << rec.error;
    EXPECT_EQ(rec.output_tokens, rec.max_tokens);
    EXPECT_EQ(int64_t(rec.chunk_s.size()), rec.max_tokens);  // One chunk per token.
    EXPECT_EQ(rec.cached_tokens, 2);
    EXPECT_GE(rec.Ttft(), 0);
    EXPECT_LE(rec.end_s, r.duration_s);
  }
  // Each later turn's prompt = the previous prompt + the fake's output + the new message.
  std::vector<std::vector<int32_t>> expected;
  for (const Conversation& c : convs) {
    std::vector<int32_t> history;
    for (const Turn& t : c.turns) {
      history.insert(history.end(), t.message.begin(), t.message.end());
      expected.push_back(history);
      const std::vector<int32_t> out = FakeOutput(t.max_tokens);
      history.insert(history.end(), out.begin(), out.end());
    }
  }
  std::vector<std::vector<int32_t>> got = server.prompts();
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);
}

TEST(LoadClientTest, ConcurrencyLimitAndFailedTurns) {
  FakeServer server(std::chrono::milliseconds(20));
  std::vector<Conversation> convs(8, Conversation{{MakeTurn({1}, 2)}});
  // A conversation whose first turn fails: its second turn is recorded, never sent.
  convs.push_back(Conversation{{MakeTurn({2}, kFailingMaxTokens), MakeTurn({3}, 2)}});
  LoadOptions o;
  o.model = "fake";
  o.max_concurrency = 2;
  const LoadResult r =
      RunLoad(*ParseBaseUrl(server.url()), convs, o, std::chrono::steady_clock::now(), nullptr);
  EXPECT_LE(server.peak_in_flight(), 2);
  EXPECT_EQ(server.prompts().size(), 9u);
  ASSERT_EQ(r.records.size(), 10u);
  int failed = 0;
  for (const RequestRecord& rec : r.records) {
    if (rec.ok) continue;
    ++failed;
    EXPECT_EQ(rec.conversation, 8);
    EXPECT_EQ(rec.error, rec.turn == 0 ? "HTTP 503: queue full"
                                       : "not sent: an earlier turn of its conversation failed");
  }
  EXPECT_EQ(failed, 2);
  EXPECT_GE(r.duration_s, 0.02 * 9 / 2);  // Nine requests, two at a time, 20 ms each.
}

TEST(LoadClientTest, RunBenchServeReadsModelsAndMetrics) {
  FakeServer server(std::chrono::milliseconds(1));
  BenchServeOptions o;
  o.url = server.url();
  o.workload = KvWorkload::kSharedPrefix;
  o.num_prompts = 6;
  o.caps.max_output_tokens = 3;
  o.load.max_concurrency = 3;
  o.sample_interval = std::chrono::milliseconds(5);
  Result<BenchServeResult> r = RunBenchServe(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->server.model, "fake");
  EXPECT_EQ(r->options.load.model, "fake");
  EXPECT_EQ(r->options.vocab_size, 512);
  EXPECT_EQ(r->options.system_prompt_tokens, 256);  // min(1024, 512 / 2)
  EXPECT_EQ(r->summary.completed, 6);
  EXPECT_LE(r->summary.total_output_tokens, 18);
  for (const std::vector<int32_t>& p : server.prompts()) {
    for (int32_t id : p) ASSERT_LT(id, 512);
  }
  ASSERT_TRUE(r->summary.prefix_cache_hit_rate.has_value());
  EXPECT_NEAR(*r->summary.prefix_cache_hit_rate, 0.25, 0.01);  // The fake's hits: 1/4.
  EXPECT_DOUBLE_EQ(*r->summary.peak_kv_usage, 0.5);
  EXPECT_FALSE(r->observations.timeline.empty());
}

TEST(LoadClientTest, UnreachableServerIsAClearError) {
  BenchServeOptions o;
  o.url = "http://127.0.0.1:1";  // Nothing listens on port 1.
  Result<BenchServeResult> r = RunBenchServe(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot reach a server at http://127.0.0.1:1"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace kvengine::loadgen
