#include "bench/kv/kv_simulator.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kvengine {

namespace {

// A request whose sequence holds KV now.
struct Running {
  SeqId seq = 0;
  int32_t request = 0;
};

// The waiting queue, ordered by FCFS key (see the header). A request keeps its key when it is
// preempted, so it re-enters ahead of everything that arrived after it.
class WaitingQueue {
 public:
  WaitingQueue(const Workload& w, bool session_fcfs)
      : w_(w), session_fcfs_(session_fcfs), key_(w.requests.size(), -1) {}

  // `request` arrives (turn 0 at t = 0, turn k when turn k-1 completes): it gets its key.
  void Arrive(int32_t request) {
    const SimRequest& r = w_.requests[static_cast<size_t>(request)];
    key_[static_cast<size_t>(request)] = session_fcfs_ ? r.session : arrivals_++;
    Requeue(request);
  }
  // A preempted request goes back at its key's position.
  void Requeue(int32_t request) { queue_.emplace(key_[static_cast<size_t>(request)], request); }
  bool empty() const { return queue_.empty(); }
  int32_t Front() const { return queue_.begin()->second; }
  void PopFront() { queue_.erase(queue_.begin()); }

 private:
  const Workload& w_;
  bool session_fcfs_;
  int64_t arrivals_ = 0;
  std::vector<int64_t> key_;                     // [request] FCFS key once arrived.
  std::set<std::pair<int64_t, int32_t>> queue_;  // (key, request), smallest key first.
};

}  // namespace

Result<SimResult> SimulateKv(const Workload& workload, KvBackend* backend,
                             const SimOptions& options, const SimProgressFn& progress) {
  KV_CHECK(backend != nullptr && backend->Idle()) << "SimulateKv needs a fresh backend";
  const std::vector<SimRequest>& reqs = workload.requests;
  SimResult res;
  res.requests = static_cast<int64_t>(reqs.size());
  // Every step appends at least one token for good (generated tokens survive preemption), so a
  // run takes at most total-output steps; the slack guards the accounting, not the policy.
  const int64_t max_steps = workload.TotalOutputTokens() + 2;

  std::vector<int64_t> generated(reqs.size(), 0);  // [request] output tokens produced so far.
  std::vector<uint8_t> admitted(reqs.size(), 0);   // [request] 1 once first admitted.
  WaitingQueue waiting(workload, options.session_fcfs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].turn == 0) waiting.Arrive(static_cast<int32_t>(i));
  }
  std::vector<Running> running;  // In admission order: back = most recently admitted.
  std::vector<int32_t> prefill;  // Scratch: prompt + generated tokens of one admission.
  SeqId next_seq = 1;
  double loaded_running_sum = 0;  // Sum of running sequences over steps under load.
  double utilization_sum = 0;
  int64_t utilization_steps = 0;

  while (!waiting.empty() || !running.empty()) {
    if (++res.steps > max_steps) return Internal("KV simulation made no progress");

    // 1. Admission (strict FCFS).
    while (!waiting.empty()) {
      const int32_t r = waiting.Front();
      const SimRequest& req = reqs[static_cast<size_t>(r)];
      prefill.assign(req.prompt.begin(), req.prompt.end());
      prefill.insert(prefill.end(), req.output.begin(),
                     req.output.begin() + static_cast<std::ptrdiff_t>(generated[size_t(r)]));
      int64_t cached = 0;
      if (!backend->Admit(next_seq, prefill, &cached)) {
        if (running.empty()) {
          return OutOfRange("request " + std::to_string(r) + " (" + std::to_string(prefill.size()) +
                            " tokens) does not fit in an empty KV pool");
        }
        break;
      }
      waiting.PopFront();
      running.push_back({next_seq++, r});
      if (!admitted[size_t(r)]) {
        admitted[size_t(r)] = 1;
        res.prompt_tokens += static_cast<int64_t>(prefill.size());
        res.cached_prompt_tokens += cached;
      } else {
        res.recompute_tokens += static_cast<int64_t>(prefill.size());
        res.cached_recompute_tokens += cached;
      }
    }

    const bool loaded = !waiting.empty();

    // 2. Decode, preempting the newest sequence while an append does not fit.
    for (size_t i = 0; i < running.size();) {
      const int32_t r = running[i].request;
      const int32_t token = reqs[size_t(r)].output[size_t(generated[size_t(r)])];
      if (backend->Decode(running[i].seq, token)) {
        ++generated[size_t(r)];
        ++res.decoded_tokens;
        ++i;
        continue;
      }
      const Running victim = running.back();  // May be running[i] itself: the loop then ends.
      running.pop_back();
      backend->Release(victim.seq);
      waiting.Requeue(victim.request);
      ++res.preemptions;
    }

    // 3. Measurement. A step is under load when requests were still waiting after admission:
    // the pool, not the supply of requests, limited how many ran.
    res.peak_running = std::max<int64_t>(res.peak_running, static_cast<int64_t>(running.size()));
    if (loaded) {
      ++res.loaded_steps;
      loaded_running_sum += static_cast<double>(running.size());
    }
    const KvOccupancy occ = backend->Occupancy();
    if (occ.slots_allocated > 0) {
      utilization_sum += static_cast<double>(occ.tokens_stored) / occ.slots_allocated;
      ++utilization_steps;
    }

    // 4. Completion; a conversation's next turn arrives.
    const int64_t completed_before = res.requests_completed;
    size_t kept = 0;
    for (const Running& run : running) {
      const SimRequest& req = reqs[size_t(run.request)];
      if (generated[size_t(run.request)] < static_cast<int64_t>(req.output.size())) {
        running[kept++] = run;
        continue;
      }
      backend->Release(run.seq);
      ++res.requests_completed;
      if (req.next >= 0) waiting.Arrive(req.next);
    }
    running.resize(kept);
    if (progress && res.requests_completed != completed_before) {
      progress(res.requests_completed, res.requests);
    }
  }

  res.mean_running =
      res.loaded_steps > 0 ? loaded_running_sum / static_cast<double>(res.loaded_steps) : 0;
  res.utilization =
      utilization_steps > 0 ? utilization_sum / static_cast<double>(utilization_steps) : 0;
  res.idle_at_end = backend->Idle();
  return res;
}

}  // namespace kvengine
