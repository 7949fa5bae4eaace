// End to end over the real Engine (EngineServerTest, engine_server_fixture.h): disconnects
// cancel requests (streamed or not, queued, prefilling, a stalled reader), and a Cancel
// delivered twice still ends each choice once.
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/engine_server_fixture.h"
#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

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
