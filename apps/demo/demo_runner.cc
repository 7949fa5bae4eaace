#include "demo/demo_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "model/kv_groups.h"
#include "planner/kv_plan.h"
#include "kvengine/engine.h"

namespace kvengine::demo {
namespace {

using Wall = std::chrono::steady_clock;

double Seconds(Wall::time_point from, Wall::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Blocks every group needs to hold the whole workload with nothing shared, plus the admission
// watermark's share: an upper bound on what the run uses, so nothing is ever preempted.
int32_t PoolBlocks(const Workload& w, int block_size) {
  int64_t blocks = 0;
  for (const DemoRequest& r : w.requests) {
    blocks += (r.prompt_tokens + r.max_tokens + block_size - 1) / block_size;
  }
  blocks += blocks / 50 + 4;
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
}

// What the engine loop reports to the runner's thread. Written by the engine's callback (its
// loop thread), read by RunWorkload's thread; everything under `mu`.
struct Inbox {
  struct Timed {
    RequestEvent event;
    Wall::time_point at;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Timed> events;
  uint64_t peak_kv_bytes = 0;
  int64_t peak_sequences = 0;
  int64_t peak_tokens_stored = 0;

  void Sample(const EngineStats& s) {
    peak_kv_bytes = std::max(peak_kv_bytes, s.kv.used_bytes);
    peak_sequences = std::max(peak_sequences, s.kv.num_sequences);
    peak_tokens_stored = std::max(peak_tokens_stored, s.kv.tokens_stored);
  }
};

// One run of the workload on a started engine. Owner: RunWorkload, on its thread; the engine's
// callback only touches `inbox_`.
class Replay {
 public:
  Replay(Engine& engine, const Workload& workload, RunResult* out)
      : engine_(engine),
        workload_(workload),
        out_(*out),
        n_(workload.requests.size()),
        prompts_(n_),
        outputs_(n_),
        submitted_at_(n_),
        submitted_(n_, false),
        has_first_(n_, false),
        finished_(n_, false) {
    out_.requests.resize(n_);
  }

  // Runs until every request has finished; on_progress after each batch of events.
  Status Run(const std::function<void(int64_t, int64_t)>& on_progress) {
    start_ = last_event_ = Wall::now();
    KV_RETURN_IF_ERROR(SubmitReady());
    while (done_ < n_) {
      std::deque<Inbox::Timed> batch;
      {
        std::unique_lock<std::mutex> lock(inbox_.mu);
        inbox_.cv.wait_for(lock, std::chrono::milliseconds(20),
                           [&] { return !inbox_.events.empty(); });
        batch.swap(inbox_.events);
      }
      // Also sampled here: steps that emit no event (a prefill chunk) still hold blocks.
      const EngineStats stats = engine_.Stats();
      {
        std::lock_guard<std::mutex> lock(inbox_.mu);
        inbox_.Sample(stats);
      }
      for (const Inbox::Timed& t : batch) KV_RETURN_IF_ERROR(Handle(t));
      KV_RETURN_IF_ERROR(SubmitReady());
      if (on_progress) on_progress(out_.generated_tokens, workload_.TotalOutputTokens());
    }
    return Status::Ok();
  }

  // Fills the run's totals, peaks, and each request's prompt and output.
  void Finish() {
    out_.wall_s = Seconds(start_, last_event_);
    std::lock_guard<std::mutex> lock(inbox_.mu);
    out_.peak_kv_bytes = inbox_.peak_kv_bytes;
    out_.peak_sequences = inbox_.peak_sequences;
    out_.peak_tokens_stored = inbox_.peak_tokens_stored;
    for (size_t i = 0; i < n_; ++i) {
      RequestResult& r = out_.requests[i];
      r.prompt = std::move(prompts_[i]);
      r.output = std::move(outputs_[i]);
      out_.prompt_tokens += r.prompt_tokens;
      out_.cached_prompt_tokens += r.cached_prompt_tokens;
    }
  }

  // The engine's callback (its loop thread, or Stop()'s): stamps the event, samples the stats
  // published just before it, and queues it for this thread.
  EventCallback Callback() {
    return [this](const RequestEvent& ev) {
      const Wall::time_point now = Wall::now();
      const EngineStats stats = engine_.Stats();
      std::lock_guard<std::mutex> lock(inbox_.mu);
      inbox_.Sample(stats);
      inbox_.events.push_back({ev, now});
      inbox_.cv.notify_one();
    };
  }

 private:
  bool Ready(const DemoRequest& r) const {
    switch (r.arrival) {
      case Arrival::kAtStart:
        return true;
      case Arrival::kAfterFirstToken:
        return has_first_[size_t(r.after)];
      case Arrival::kAfterFinish:
        return finished_[size_t(r.after)];
    }
    return false;
  }

  // Submits every request whose arrival condition holds, in workload order. Only this thread
  // reads events, so a request's id is in index_of_ before any of its events is looked at.
  Status SubmitReady() {
    for (size_t i = 0; i < n_; ++i) {
      const DemoRequest& r = workload_.requests[i];
      if (submitted_[i] || !Ready(r)) continue;
      prompts_[i] = workload_.Prompt(i, prompts_, outputs_);
      KV_CHECK(int64_t(prompts_[i].size()) == r.prompt_tokens);
      RequestParams p;
      p.prompt = prompts_[i];
      p.max_tokens = r.max_tokens;
      p.sampling.temperature = 0;  // Greedy; with ignore_eos, exactly max_tokens tokens.
      p.ignore_eos = true;
      submitted_at_[i] = Wall::now();
      Result<RequestId> id = engine_.Submit(std::move(p), Callback());
      if (!id.ok()) {
        return Status(id.status().code(), "demo request " + std::to_string(i) + " (" +
                                              std::string(ScenarioName(r.scenario)) +
                                              "): " + id.status().message());
      }
      index_of_[*id] = i;
      submitted_[i] = true;
    }
    return Status::Ok();
  }

  Status Handle(const Inbox::Timed& t) {
    const RequestEvent& ev = t.event;
    const size_t i = index_of_.at(ev.id);
    RequestResult& r = out_.requests[i];
    if (ev.has_token) {
      if (!has_first_[i]) r.ttft_s = Seconds(submitted_at_[i], t.at);
      has_first_[i] = true;
      outputs_[i].push_back(ev.token);
      ++out_.generated_tokens;
    }
    if (ev.finish_reason == FinishReason::kNone) return Status::Ok();
    if (ev.finish_reason != FinishReason::kLength) {
      return Internal("demo request " + std::to_string(i) + " ended with '" +
                      FinishReasonName(ev.finish_reason) + "' " + ev.error);
    }
    r.scenario = workload_.requests[i].scenario;
    r.prompt_tokens = ev.prompt_tokens;
    r.cached_prompt_tokens = ev.cached_prompt_tokens;
    r.completion_tokens = ev.completion_tokens;
    r.e2e_s = Seconds(submitted_at_[i], t.at);
    finished_[i] = true;
    last_event_ = std::max(last_event_, t.at);
    ++done_;
    return Status::Ok();
  }

  Engine& engine_;
  const Workload& workload_;
  RunResult& out_;
  const size_t n_;
  Inbox inbox_;
  std::unordered_map<RequestId, size_t> index_of_;
  std::vector<std::vector<int32_t>> prompts_, outputs_;  // [request] token ids.
  std::vector<Wall::time_point> submitted_at_;           // [request]
  std::vector<bool> submitted_, has_first_, finished_;   // [request]
  size_t done_ = 0;
  Wall::time_point start_, last_event_;
};

}  // namespace

double RunResult::PrefixHitRate() const {
  return prompt_tokens > 0 ? double(cached_prompt_tokens) / double(prompt_tokens) : 0;
}

double RunResult::GeneratedTokensPerSecond() const {
  return wall_s > 0 ? double(generated_tokens) / wall_s : 0;
}

double RunResult::TokensPerSecond() const {
  return wall_s > 0 ? double(prompt_tokens - cached_prompt_tokens + generated_tokens) / wall_s : 0;
}

uint64_t RunResult::ContiguousBytes() const {
  return uint64_t(peak_sequences) * kv_bytes_per_max_sequence;
}

std::vector<double> Ttfts(const RunResult& run, const Scenario* scenario) {
  std::vector<double> t;
  for (const RequestResult& r : run.requests) {
    if (scenario == nullptr || r.scenario == *scenario) t.push_back(r.ttft_s);
  }
  return t;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  const double rank = std::ceil(p / 100.0 * double(values.size()));
  const size_t i = rank < 1 ? 0 : std::min(values.size() - 1, size_t(rank) - 1);
  return values[i];
}

Result<RunResult> RunWorkload(std::shared_ptr<const Model> model, const Workload& workload,
                              const RunOptions& options) {
  const ModelConfig& cfg = model->config();
  const KvDtypeMap dtypes = UniformDtypes(options.kv_dtype);
  PlanOptions po;
  po.ctx = options.max_model_len;
  po.block_size = options.block_size;
  KV_ASSIGN_OR_RETURN(KvPlan plan, PlanKv(cfg, dtypes, po));
  if (workload.LongestRequest() > options.max_model_len) {
    return OutOfRange("the demo workload's longest request (" +
                      std::to_string(workload.LongestRequest()) +
                      " tokens) exceeds max_model_len " + std::to_string(options.max_model_len));
  }

  EngineOptions eo;
  eo.sched = options.sched;
  eo.max_queued_requests = static_cast<int>(workload.requests.size()) + 1;
  eo.threads = options.threads;
  KV_ASSIGN_OR_RETURN(eo.kv.groups, BuildKvGroups(cfg, dtypes));
  eo.kv.block_size = options.block_size;
  eo.kv.num_blocks = PoolBlocks(workload, options.block_size);
  eo.kv.max_model_len = options.max_model_len;
  eo.kv.enable_prefix_caching = true;
  eo.kv.model_fingerprint = options.model_fingerprint;
  KV_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(model, eo));

  RunResult out;
  out.kv_dtype = options.kv_dtype;
  out.max_model_len = options.max_model_len;
  out.block_size = options.block_size;
  out.max_num_batched_tokens = options.sched.max_num_batched_tokens;
  out.kv_bytes_per_token = plan.kv_bytes_per_token;
  out.kv_bytes_per_max_sequence = plan.kv_bytes_per_sequence;
  out.pool_bytes = engine->Stats().kv.pool_bytes;

  // The replay outlives the engine's loop: Stop() joins it (and delivers any final cancelled
  // events) before the replay goes away.
  Replay replay(*engine, workload, &out);
  engine->Start();
  const Status status = replay.Run(options.on_progress);
  const EngineStats final_stats = engine->Stats();
  engine->Stop();
  KV_RETURN_IF_ERROR(status);
  replay.Finish();
  out.preemptions = final_stats.preemptions_total;
  out.steps = final_stats.steps_total;
  return out;
}

}  // namespace kvengine::demo
