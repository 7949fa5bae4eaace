// The engine loop thread: takes requests and cancellations, runs one scheduled step (one
// batched forward pass), samples, and publishes stats before delivering the step's events.
#include <algorithm>
#include <cmath>

#include "runtime/engine_internal.h"
#include "runtime/generator.h"

namespace kvengine {

namespace {

using engine_internal::kSeqsPerRequest;

double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

// log(sum(exp(logits))), in double.
double LogSumExp(const float* logits, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  if (!std::isfinite(mx)) return mx;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return mx + std::log(sum);
}

bool Contains(const std::vector<int32_t>& v, int32_t t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

}  // namespace

void Engine::Impl::Loop() {
  while (WaitForWork()) {
    if (!sched->idle()) Step();
    Publish();
    Deliver();
  }
}

bool Engine::Impl::WaitForWork() {
  std::deque<std::unique_ptr<ActiveRequest>> new_requests;
  std::vector<Cancellation> new_cancels;
  std::vector<std::function<void()>> tasks;
  {
    std::unique_lock<std::mutex> lock(mu);
    // A stalled scheduler (nothing fitted, nothing preempted) waits for new input instead of
    // spinning; it cannot happen with requests that passed Submit's checks.
    wake.wait(lock, [&] {
      return stopping || !inbox.empty() || !cancels.empty() || tier_ready || !loop_tasks.empty() ||
             (!sched->idle() && !stalled);
    });
    if (stopping) return false;
    new_requests.swap(inbox);
    waiting_seqs_in_loop.fetch_add(inbox_seqs);
    inbox_seqs = 0;
    new_cancels.swap(cancels);
    tasks.swap(loop_tasks);
    if (tier_ready) stalled = false;
    tier_ready = false;
    // Taken from the inbox, they wait in the loop now: count them there at once (Publish
    // recounts after the step), so Submit's queue limit and Stats never miss them.
    waiting_in_loop.fetch_add(static_cast<int64_t>(new_requests.size()));
  }
  if (!new_requests.empty() || !new_cancels.empty()) stalled = false;
  for (auto& task : tasks) task();
  LandPrefetches();
  for (auto& r : new_requests) Accept(std::move(r));
  for (const Cancellation& c : new_cancels) {
    if (c.choice == kAllChoices) {
      CancelRequest(c.id);
    } else {
      StopChoiceNow(c.id, c.choice);
    }
  }
  RetireFinished();
  return true;
}

void Engine::Impl::Accept(std::unique_ptr<ActiveRequest> r, bool may_prefetch) {
  ActiveRequest* req = r.get();
  requests.emplace(r->id, std::move(r));
  const uint64_t ticket = may_prefetch ? MaybePrefetch(*req) : 0;
  if (ticket != 0) {
    parked.emplace(ticket, req->id);  // Enters the scheduler when the blocks are in RAM.
    return;
  }
  Enqueue(req);
}

void Engine::Impl::Enqueue(ActiveRequest* r) {
  ChoiceState& c0 = r->choices[0];
  c0.seq = r->id * kSeqsPerRequest;
  c0.exists = true;
  NewSequence ns;
  ns.id = c0.seq;
  ns.prompt = r->params.prompt;
  ns.priority = r->params.priority;
  ns.cache_salt = r->params.cache_salt;
  ns.seats = r->params.n;
  const Status s = sched->Add(std::move(ns));
  KV_CHECK(s.ok()) << s.ToString();  // Submit validated everything Add checks.
  seq_owner[c0.seq] = Owner{r, 0};
}

uint64_t Engine::Impl::MaybePrefetch(const ActiveRequest& r) {
  if (tiers == nullptr || !tiers->has_slow_tiers() || !kv->config().enable_prefix_caching) {
    return 0;
  }
  const std::vector<int32_t>& prompt = r.params.prompt;
  const int64_t b = kv->block_size();
  const int64_t limit = (static_cast<int64_t>(prompt.size()) - 1) / b;  // One token must run.
  const PrefixLookup look = kv->LookupPrefix(prompt, r.params.cache_salt, limit * b);
  std::vector<std::vector<TierKey>> blocks;
  for (int64_t j = look.cached_tokens / b; j < limit; ++j) {
    std::vector<TierKey>& keys = blocks.emplace_back();
    for (int g = 0; g < kv->num_groups(); ++g) keys.push_back(TierKey{look.block_hashes[size_t(j)], g});
  }
  return tiers->Prefetch(std::move(blocks));
}

void Engine::Impl::LandPrefetches() {
  if (tiers == nullptr || parked.empty()) return;
  for (uint64_t ticket : tiers->Poll()) {
    const auto p = parked.find(ticket);
    if (p == parked.end()) continue;
    const auto it = requests.find(p->second);
    parked.erase(p);
    // Cancelled while its blocks were fetched: its final events went out already.
    if (it == requests.end() || it->second->num_finished > 0) continue;
    Enqueue(it->second.get());
    stalled = false;
  }
}

void Engine::Impl::CancelRequest(RequestId id) {
  auto it = requests.find(id);
  if (it == requests.end()) return;  // Unknown, finished, or cancelled already.
  ActiveRequest* r = it->second.get();
  for (int i = 0; i < r->params.n; ++i) FinishChoice(r, i, FinishReason::kCancelled, "");
}

void Engine::Impl::StopChoiceNow(RequestId id, int choice) {
  auto it = requests.find(id);
  if (it == requests.end() || choice >= it->second->params.n) return;
  // A stop string is found in text, so a choice that produced none cannot have one (and before
  // the fork of n > 1 choice 0 holds every choice's seat).
  if (it->second->choices[size_t(choice)].completion_tokens == 0) return;
  FinishChoice(it->second.get(), choice, FinishReason::kStop, "");
}

void Engine::Impl::Step() {
  const int64_t tier_tokens_before = kv->tier_hit_tokens();
  const SchedulerOutput plan = sched->Schedule();
  const bool tier_fills = kv->tier_hit_tokens() != tier_tokens_before;
  stalled = plan.empty() && plan.preempted.empty();
  if (plan.empty()) return;
  std::vector<SeqChunk> chunks;
  chunks.reserve(plan.chunks.size());
  for (const ScheduledChunk& c : plan.chunks) {
    chunks.push_back(
        SeqChunk{c.seq, c.start_pos,
                 sched->Tokens(c.seq).subspan(size_t(c.start_pos), size_t(c.num_tokens)), false});
  }
  // One pass for every scheduled token: the weights are read once per step.
  const int64_t t0 = clock->NowNanos();
  const Status st = model->Forward(chunks, *kv, *pool, &forward_out);
  // The tier cost model compares fetching with this measured prefill speed; decode-only steps
  // say little about it.
  if (tiers != nullptr && plan.num_tokens >= 32) {
    tiers->ObservePrefill(plan.num_tokens, Seconds(clock->NowNanos() - t0));
  }
  if (!st.ok()) {
    FailChunks(plan, st);
    RetireFinished();
    return;
  }
  sched->Complete(plan);
  ++counters.steps_total;
  for (const ScheduledChunk& c : plan.chunks) {
    const Owner& o = seq_owner.at(c.seq);
    ActiveRequest* r = o.request;
    ChoiceState& ch = r->choices[size_t(o.choice)];
    const int64_t begin = c.start_pos, end = c.start_pos + c.num_tokens;
    const int64_t prompt = static_cast<int64_t>(r->params.prompt.size());
    // A preempted sequence resumed with blocks from a tier: swapped in rather than recomputed.
    if (c.admitted && ch.computed_hwm > 0 && tier_fills) ++counters.tier_swap_ins_total;
    if (c.admitted && r->cached_prompt_tokens < 0) {  // First admission: begin = cache hits.
      r->cached_prompt_tokens = begin;
      counters.prompt_tokens_total += prompt;
    }
    // Positions below the choice's high-water mark ran before (a recompute after preemption);
    // prompt positions above it are computed for the first time.
    counters.recomputed_tokens_total +=
        std::max<int64_t>(0, std::min(end, ch.computed_hwm) - begin);
    counters.prompt_tokens_computed_total +=
        std::max<int64_t>(0, std::min(end, prompt) - std::max(begin, ch.computed_hwm));
    ch.computed_hwm = std::max(ch.computed_hwm, end);
  }
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    if (plan.chunks[i].samples) OnLogits(plan.chunks[i], forward_out.Row(i));
  }
  RetireFinished();
}

void Engine::Impl::OnLogits(const ScheduledChunk& chunk, const float* logits) {
  auto it = seq_owner.find(chunk.seq);
  if (it == seq_owner.end()) return;
  ActiveRequest* r = it->second.request;
  const int choice = it->second.choice;
  const double lse = LogSumExp(logits, model->n_vocab());
  if (r->forked || r->params.n == 1) {
    Sample(r, choice, logits, lse);
    return;
  }
  // The prompt of an n > 1 request is computed: every other choice forks from it (sharing its
  // blocks, copy-on-write after) and all sample their first token from the same logits.
  KV_CHECK(choice == 0);
  const int64_t prompt = static_cast<int64_t>(r->params.prompt.size());
  for (int i = 1; i < r->params.n; ++i) {
    ChoiceState& ch = r->choices[size_t(i)];
    ch.seq = r->id * kSeqsPerRequest + uint64_t(i);
    const Status st = sched->Fork(r->choices[0].seq, ch.seq);
    KV_CHECK(st.ok()) << st.ToString();  // The parent holds a seat per choice.
    ch.exists = true;
    ch.computed_hwm = prompt;
    seq_owner[ch.seq] = Owner{r, i};
  }
  r->forked = true;
  for (int i = 0; i < r->params.n; ++i) Sample(r, i, logits, lse);
}

void Engine::Impl::Sample(ActiveRequest* r, int choice, const float* logits, double lse) {
  ChoiceState& ch = r->choices[size_t(choice)];
  if (ch.finished) return;
  const std::span<const float> row(logits, size_t(model->n_vocab()));
  const int32_t tok = ch.sampler.Sample(row, sched->Tokens(ch.seq));
  RequestEvent e;
  e.choice = choice;
  e.has_token = true;
  e.token = tok;
  e.logprob = static_cast<float>(row[size_t(tok)] - lse);
  if (r->params.logprobs > 0) {
    for (const auto& [id, logit] : TopK(row, r->params.logprobs)) {
      e.top_logprobs.push_back(TokenLogprob{id, static_cast<float>(logit - lse)});
    }
  }
  ++ch.completion_tokens;
  ++counters.generation_tokens_total;
  const int64_t now = clock->NowNanos();
  if (!r->first_token_seen) {
    r->first_token_seen = true;
    counters.ttft.Observe(Seconds(now - r->arrival_ns));
  } else if (ch.last_token_ns >= 0) {
    counters.itl.Observe(Seconds(now - ch.last_token_ns));
  }
  ch.last_token_ns = now;
  Emit(*r, std::move(e));
  const RequestParams& p = r->params;
  if (Contains(p.stop_token_ids, tok) || (!p.ignore_eos && Contains(options.eos_token_ids, tok))) {
    FinishChoice(r, choice, FinishReason::kStop, "");
  } else if (ch.completion_tokens >= p.max_tokens) {
    FinishChoice(r, choice, FinishReason::kLength, "");
  } else {
    sched->AppendToken(ch.seq, tok);
  }
}

void Engine::Impl::FinishChoice(ActiveRequest* r, int choice, FinishReason reason,
                                const std::string& error) {
  ChoiceState& ch = r->choices[size_t(choice)];
  if (ch.finished) return;
  ch.finished = true;
  if (ch.exists) {
    sched->Remove(ch.seq);  // Releases its blocks now, whatever its state.
    seq_owner.erase(ch.seq);
  }
  RequestEvent e;
  e.choice = choice;
  e.finish_reason = reason;
  e.error = error;
  e.prompt_tokens = static_cast<int64_t>(r->params.prompt.size());
  e.cached_prompt_tokens = std::max<int64_t>(0, r->cached_prompt_tokens);
  e.completion_tokens = ch.completion_tokens;
  Emit(*r, std::move(e));
  switch (reason) {
    case FinishReason::kCancelled:
      r->cancelled = true;
      break;
    case FinishReason::kError:
      r->failed = true;
      break;
    case FinishReason::kNone:
    case FinishReason::kStop:
    case FinishReason::kLength:
      break;
  }
  if (++r->num_finished == r->params.n) retired.push_back(r->id);
}

void Engine::Impl::RetireFinished() {
  for (RequestId id : retired) {
    auto it = requests.find(id);
    if (it == requests.end()) continue;
    const ActiveRequest& r = *it->second;
    if (r.cancelled) {
      ++counters.requests_cancelled_total;
    } else if (!r.failed) {
      ++counters.requests_finished_total;
      counters.e2e.Observe(Seconds(clock->NowNanos() - r.arrival_ns));
    }
    requests.erase(it);
  }
  retired.clear();
}

void Engine::Impl::FailChunks(const SchedulerOutput& plan, const Status& status) {
  for (const ScheduledChunk& c : plan.chunks) {
    auto it = seq_owner.find(c.seq);
    if (it == seq_owner.end()) continue;
    ActiveRequest* r = it->second.request;
    for (int i = 0; i < r->params.n; ++i) {
      FinishChoice(r, i, FinishReason::kError, "generation failed: " + status.message());
    }
  }
}

void Engine::Impl::Emit(const ActiveRequest& r, RequestEvent e) {
  e.id = r.id;
  events.push_back(engine_internal::PendingEvent{r.on_event, std::move(e)});
}

void Engine::Impl::Publish() {
  // Every iteration: KvCacheManager::Stats scans the pool's block states (O(blocks), about a
  // nanosecond each), small next to a forward pass, and it keeps the promise that a step's
  // events are delivered after its stats.
  int64_t running = 0, seats_running = 0, seats_waiting = 0;
  for (const auto& [id, r] : requests) {
    bool is_running = false;
    int64_t unfinished = 0;
    for (const ChoiceState& ch : r->choices) {
      if (ch.finished) continue;
      ++unfinished;
      const SchedSequence* s = ch.exists ? sched->Find(ch.seq) : nullptr;
      is_running = is_running || (s != nullptr && s->status == SeqStatus::kRunning);
    }
    running += is_running;
    (is_running ? seats_running : seats_waiting) += unfinished;
  }
  const int64_t waiting = static_cast<int64_t>(requests.size()) - running;
  {
    std::lock_guard<std::mutex> lock(mu);  // Submit reads the three together.
    waiting_in_loop.store(waiting);
    waiting_seqs_in_loop.store(seats_waiting);
    running_seqs.store(seats_running);
  }
  counters.requests_running = running;
  counters.requests_waiting = waiting;
  counters.preemptions_total = sched->num_preemptions();
  counters.kv = kv->Stats();
  counters.prefix_cache_queries_tokens = counters.kv.prefix_query_tokens;
  counters.prefix_cache_hits_tokens = counters.kv.prefix_hit_tokens;
  int64_t used = 0, capacity_blocks = 0;
  for (const KvGroupStats& g : counters.kv.groups) {
    used += g.used_blocks;
    capacity_blocks += g.capacity_blocks;
  }
  counters.kv_usage = capacity_blocks > 0 ? double(used) / double(capacity_blocks) : 0.0;
  counters.has_tiers = tiers != nullptr;
  if (tiers != nullptr) counters.tiers = tiers->Stats();
  std::lock_guard<std::mutex> lock(stats_mu);
  published = counters;
}

void Engine::Impl::Deliver() {
  std::vector<engine_internal::PendingEvent> out;
  out.swap(events);
  for (const engine_internal::PendingEvent& e : out) (*e.callback)(e.event);
}

void Engine::Impl::CancelEverything() {
  std::deque<std::unique_ptr<ActiveRequest>> queued;
  {
    std::lock_guard<std::mutex> lock(mu);
    queued.swap(inbox);
    inbox_seqs = 0;
    cancels.clear();
  }
  for (auto& r : queued) Accept(std::move(r), /*may_prefetch=*/false);
  std::vector<RequestId> ids;
  for (const auto& [id, r] : requests) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) CancelRequest(id);
  RetireFinished();
  Publish();
  Deliver();
}

}  // namespace kvengine
