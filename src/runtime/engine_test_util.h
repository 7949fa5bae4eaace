// Helpers of the engine tests: the models, an event log that engine callbacks write into, and
// the single-sequence reference run (Generate) that engine results must equal exactly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kvengine/engine.h"
#include "runtime/generator.h"
#include "runtime/runtime_test_util.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"

namespace kvengine::engine_test {

inline constexpr int32_t kEos = 2;  // Both the synthetic vocabulary's and stories260K's </s>.

// A synthetic preset, generated once into the test temp dir (safe when test processes run in
// parallel).
inline std::shared_ptr<const Model> SyntheticModel(const char* preset) {
  auto spec = FindSyntheticPreset(preset);
  KV_CHECK(spec.ok());
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "kvengine_engine_test").string();
  auto path = EnsureSyntheticModel(*spec, dir);
  KV_CHECK(path.ok()) << path.status().ToString();
  testing::LoadedModel m = testing::LoadForTest(*path);
  return std::shared_ptr<const Model>(std::move(m.model));
}

// The `tiny` synthetic model (2 layers, 512 tokens of vocabulary).
inline std::shared_ptr<const Model> TinyModel() {
  static std::shared_ptr<const Model> model = SyntheticModel("tiny");
  return model;
}

using testing::StoriesPath;

inline std::shared_ptr<const Model> StoriesModel() {
  testing::LoadedModel m = testing::LoadForTest(StoriesPath());
  return std::shared_ptr<const Model>(std::move(m.model));
}

// Options the tests start from: f16 KV (the engine's default), blocks of 16, one thread.
inline EngineOptions BaseOptions(int32_t blocks, int64_t max_model_len = 512) {
  EngineOptions o;
  o.kv.block_size = 16;
  o.kv.num_blocks = blocks;
  o.kv.max_model_len = max_model_len;
  o.threads = 1;
  o.sched.max_num_seqs = 16;
  o.sched.max_num_batched_tokens = 64;
  o.eos_token_ids = {kEos};
  return o;
}

inline std::unique_ptr<Engine> MakeEngine(std::shared_ptr<const Model> model,
                                          const EngineOptions& o) {
  auto e = Engine::Create(std::move(model), o);
  KV_CHECK(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

// A deterministic prompt of n tokens starting with BOS (1); `salt` varies the content.
inline std::vector<int32_t> Prompt(int n, int salt = 0) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 101) % 250);
  return p;
}

inline SamplingParams Greedy() {
  SamplingParams s;
  s.temperature = 0;
  return s;
}

// A greedy request for `max_tokens` new tokens that ignores EOS, its prompt Prompt(prompt_len,
// salt).
inline RequestParams GreedyRequest(int prompt_len, int64_t max_tokens, int salt = 0) {
  RequestParams p;
  p.prompt = Prompt(prompt_len, salt);
  p.max_tokens = max_tokens;
  p.sampling = Greedy();
  p.ignore_eos = true;
  return p;
}

// The reference: `prompt` alone through Generate on a fresh f16 cache.
inline std::vector<int32_t> RunAlone(const Model& model, const RequestParams& p, int choice = 0) {
  auto kv = testing::MakeKv(model, KvDtype::kF16, 512, 16, /*prefix=*/false, 256);
  ThreadPool pool(1);
  GenerateOptions o;
  o.max_new_tokens = p.max_tokens;
  o.sampling = p.sampling;
  o.sampling.seed += uint64_t(choice);
  o.stop_at_eos = !p.ignore_eos;
  o.eos_token = kEos;
  auto r = Generate(model, *kv, pool, 1, p.prompt, o);
  KV_CHECK(r.ok()) << r.status().ToString();
  return r->output_ids;
}

// No event of a choice follows its final event (checked for choices 0..choices-1).
inline void ExpectNothingAfterFinal(const std::vector<RequestEvent>& events, int choices) {
  for (int c = 0; c < choices; ++c) {
    bool ended = false;
    for (const RequestEvent& e : events) {
      if (e.choice != c) continue;
      EXPECT_FALSE(ended) << "event after the final one, request " << e.id << " choice " << c;
      ended = ended || e.finish_reason != FinishReason::kNone;
    }
  }
}

// Records engine events; thread-safe. Must outlive the engine writing into it.
class EventLog {
 public:
  EventCallback Callback() {
    return [this](const RequestEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_[e.id].push_back(e);
      cv_.notify_all();
    };
  }

  // Waits until request `id` has `finals` final events.
  bool WaitFinals(RequestId id, int finals, double timeout_s = 30) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                        [&] { return CountFinals(id) >= finals; });
  }
  // Waits until request `id` has at least `tokens` token events.
  bool WaitTokens(RequestId id, int tokens, double timeout_s = 30) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
      int n = 0;
      for (const RequestEvent& e : events_[id]) n += e.has_token;
      return n >= tokens;
    });
  }

  std::vector<int32_t> Tokens(RequestId id, int choice = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int32_t> t;
    for (const RequestEvent& e : events_[id]) {
      if (e.choice == choice && e.has_token) t.push_back(e.token);
    }
    return t;
  }
  std::vector<RequestEvent> Events(RequestId id) {
    std::lock_guard<std::mutex> lock(mu_);
    return events_[id];
  }
  std::vector<RequestEvent> Finals(RequestId id) {
    std::vector<RequestEvent> f;
    for (const RequestEvent& e : Events(id)) {
      if (e.finish_reason != FinishReason::kNone) f.push_back(e);
    }
    return f;
  }

 private:
  int CountFinals(RequestId id) {
    int n = 0;
    for (const RequestEvent& e : events_[id]) n += e.finish_reason != FinishReason::kNone;
    return n;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<RequestId, std::vector<RequestEvent>> events_;
};

// Polls `pred` every millisecond for up to `timeout_s`.
inline bool WaitUntil(const std::function<bool()>& pred, double timeout_s = 30) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

inline int64_t UsedBlocks(const EngineStats& s) {
  int64_t used = 0;
  for (const KvGroupStats& g : s.kv.groups) used += g.used_blocks;
  return used;
}

// Submits every request (the engine not started yet), starts the engine and expects each to
// decode exactly what it decodes alone (RunAlone). Call it in ASSERT_NO_FATAL_FAILURE.
inline void ExpectSameTokensAsAlone(Engine& engine, EventLog& log, const Model& model,
                                    const std::vector<RequestParams>& requests,
                                    double timeout_s = 30) {
  std::vector<std::pair<RequestId, RequestParams>> reqs;
  for (const RequestParams& p : requests) {
    auto id = engine.Submit(p, log.Callback());
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    reqs.emplace_back(*id, p);
  }
  engine.Start();
  for (auto& [id, p] : reqs) {
    ASSERT_TRUE(log.WaitFinals(id, 1, timeout_s));
    EXPECT_EQ(log.Tokens(id), RunAlone(model, p)) << "request " << id;
  }
}

}  // namespace kvengine::engine_test
