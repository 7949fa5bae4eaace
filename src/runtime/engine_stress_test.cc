// A randomized load on a small pool: two threads submit requests of random shapes (n > 1,
// sampling, shared prefixes, priorities) while others are cancelled right away or mid-stream.
// Every choice ends with exactly one final event and no token after it; every request that was
// not cancelled decodes exactly what it decodes alone; no block stays in use.
#include <functional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "kvengine/engine.h"
#include "runtime/engine_test_util.h"

namespace kvengine {
namespace {

using namespace engine_test;  // NOLINT: test helpers.

struct Planned {
  RequestParams params;
  int cancel_at = -1;  // -1: never; 0: right after Submit; k: at its k-th token event.
  RequestId id = 0;
  bool accepted = false;
};

std::vector<Planned> PlanLoad(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  const std::vector<int32_t> system = Prompt(32, 99);
  std::vector<Planned> load;
  for (int i = 0; i < count; ++i) {
    Planned p;
    const int len = 1 + int(rng() % 100);
    p.params.prompt = rng() % 3 == 0 ? system : std::vector<int32_t>{1};
    const std::vector<int32_t> tail = Prompt(len + 1, i);
    p.params.prompt.insert(p.params.prompt.end(), tail.begin() + 1, tail.end());
    p.params.max_tokens = 1 + int64_t(rng() % 50);
    p.params.n = rng() % 4 == 0 ? 2 + int(rng() % 2) : 1;
    if (rng() % 2 == 0) {
      p.params.sampling = Greedy();
    } else {
      p.params.sampling.seed = rng();
    }
    p.params.ignore_eos = rng() % 2 == 0;
    p.params.priority = int(rng() % 3);
    const int c = int(rng() % 10);
    p.cancel_at = c < 2 ? 0 : c < 4 ? 1 + int(rng() % 8) : -1;
    load.push_back(std::move(p));
  }
  return load;
}

TEST(EngineStressTest, RandomLoadWithCancellations) {
  auto model = TinyModel();
  EventLog log;
  EngineOptions o = BaseOptions(40);
  o.sched.max_num_seqs = 8;
  o.sched.max_num_batched_tokens = 32;
  o.threads = 2;
  auto engine = MakeEngine(model, o);
  engine->Start();
  std::vector<Planned> load = PlanLoad(7, 40);
  auto submit_range = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      Planned& p = load[i];
      auto tokens = std::make_shared<int>(0);
      const int cancel_at = p.cancel_at;
      EventCallback cb = [&engine, cb = log.Callback(), tokens, cancel_at](const RequestEvent& e) {
        cb(e);
        if (e.has_token && ++*tokens == cancel_at) engine->Cancel(e.id);
      };
      auto id = engine->Submit(p.params, std::move(cb));
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      p.id = *id;
      p.accepted = true;
      if (p.cancel_at == 0) engine->Cancel(p.id);
      std::this_thread::sleep_for(std::chrono::microseconds(200 * (i % 5)));
    }
  };
  std::thread first(submit_range, 0, load.size() / 2);
  std::thread second(submit_range, load.size() / 2, load.size());
  first.join();
  second.join();
  int finished = 0, cancelled = 0;
  for (const Planned& p : load) {
    ASSERT_TRUE(p.accepted);
    ASSERT_TRUE(log.WaitFinals(p.id, p.params.n)) << "request " << p.id;
    const auto finals = log.Finals(p.id);
    ASSERT_EQ(finals.size(), size_t(p.params.n));
    bool was_cancelled = false;
    for (const RequestEvent& f : finals)
      was_cancelled |= f.finish_reason == FinishReason::kCancelled;
    ExpectNothingAfterFinal(log.Events(p.id), p.params.n);
    for (int c = 0; c < p.params.n; ++c) {
      if (!was_cancelled) {
        EXPECT_EQ(log.Tokens(p.id, c), RunAlone(*model, p.params, c)) << p.id << "/" << c;
      }
    }
    if (p.cancel_at < 0) {
      EXPECT_FALSE(was_cancelled) << p.id;
    }
    (was_cancelled ? cancelled : finished) += 1;
  }
  EXPECT_TRUE(WaitUntil(
      [&] {
        const EngineStats s = engine->Stats();
        return s.requests_running == 0 && s.requests_waiting == 0 && UsedBlocks(s) == 0;
      },
      10));
  const EngineStats s = engine->Stats();
  EXPECT_EQ(s.requests_finished_total, finished);
  EXPECT_EQ(s.requests_cancelled_total, cancelled);
  EXPECT_EQ(UsedBlocks(s), 0);
}

}  // namespace
}  // namespace kvengine
