// Engine's public API: creation, the loop thread's start and stop, and Submit's validation and
// up-front rejection (any thread). The loop itself is in engine_loop.cc.
#include "kvengine/engine.h"

#include <algorithm>
#include <future>
#include <string>

#include "base/sha256.h"
#include "model/kv_groups.h"
#include "runtime/engine_internal.h"

namespace kvengine {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

Result<std::unique_ptr<Engine>> Engine::Create(std::shared_ptr<const Model> model,
                                               EngineOptions options) {
  if (model == nullptr) return InvalidArgument("the engine needs a model");
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  if (options.max_queued_requests < 0) return InvalidArgument("max_queued_requests must be >= 0");
  KV_RETURN_IF_ERROR(options.sched.Validate());
  for (int32_t t : options.eos_token_ids) {
    if (t < 0 || t >= model->n_vocab()) {
      return InvalidArgument("EOS token " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  if (options.kv.max_model_len < 1) return InvalidArgument("max_model_len must be >= 1");
  if (options.kv.groups.empty()) {
    KV_ASSIGN_OR_RETURN(options.kv.groups,
                        BuildKvGroups(model->config(), UniformDtypes(KvDtype::kF16)));
  }
  if (options.kv.model_fingerprint.empty()) options.kv.model_fingerprint = model->config().name;
  auto impl = std::make_unique<Impl>();
  impl->model = std::move(model);
  impl->clock = options.clock != nullptr ? options.clock : &SteadyClock::Get();
  KV_ASSIGN_OR_RETURN(impl->kv, KvCacheManager::Create(options.kv));
  impl->capacity = engine_internal::KvCapacity::Of(*impl->kv, options.sched.contiguous_reservation);
  if (options.tiers.enabled()) {
    TierLayout layout;
    layout.namespace_digest = Sha256Of(impl->kv->cache_namespace());
    for (int g = 0; g < impl->kv->num_groups(); ++g) {
      layout.bytes_per_block.push_back(impl->kv->sizing().bytes_per_block[size_t(g)]);
    }
    layout.block_size = impl->kv->block_size();
    layout.bytes_per_token = impl->capacity.BytesPerToken();
    layout.groups = impl->kv->config().groups;
    KV_ASSIGN_OR_RETURN(impl->tiers, OpenTiers(options.tiers, std::move(layout), impl->clock));
    impl->tiers->set_on_ready([impl = impl.get()] {
      {
        std::lock_guard<std::mutex> lock(impl->mu);
        impl->tier_ready = true;
      }
      impl->wake.notify_all();
    });
    impl->kv->SetTierHook(impl->tiers.get());
  }
  impl->sched = std::make_unique<Scheduler>(impl->kv.get(), options.sched, impl->clock);
  impl->pool = std::make_unique<ThreadPool>(options.threads > 0 ? options.threads
                                                                : ThreadPool::DefaultThreadCount());
  impl->options = std::move(options);
  impl->published.kv = impl->kv->Stats();
  impl->counters.kv = impl->published.kv;
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { Stop(); }

void Engine::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->started || impl_->stopping) return;
  impl_->started = true;
  impl_->thread = std::thread([impl = impl_.get()] { impl->Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  // The loop is gone (or never ran): its state is ours now. Tasks it did not get to (an Offload
  // racing with Stop) run here, so their callers are not left waiting.
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    tasks.swap(impl_->loop_tasks);
  }
  for (auto& task : tasks) task();
  impl_->CancelEverything();
  if (impl_->tiers != nullptr) {
    // What the pool and RAM still cache goes to disk, so a restarted engine finds it; then the
    // I/O thread is joined while the loop's mutex (its wake-up target) still exists.
    impl_->kv->DemoteAllCached();
    impl_->tiers->SpillRamToDisk(/*clear=*/false);
    impl_->kv->SetTierHook(nullptr);
    impl_->tiers.reset();
  }
}

Status Engine::Offload(OffloadTo target) {
  if (impl_->tiers == nullptr) return Unavailable("the engine has no offload tiers");
  std::promise<void> done;
  auto task = [impl = impl_.get(), target, &done] {
    impl->kv->DemoteAllCached();
    switch (target) {
      case OffloadTo::kRam:
        impl->tiers->Flush();
        break;
      case OffloadTo::kDisk:
        impl->tiers->SpillRamToDisk(/*clear=*/true);
        break;
      case OffloadTo::kBelowDisk:
        impl->tiers->Flush();
        impl->tiers->ClearRam();
        break;
    }
    impl->Publish();  // Stats() right after Offload shows its effect.
    done.set_value();
  };
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping || !impl_->started) {
      return Unavailable("the engine is not running");
    }
    impl_->loop_tasks.push_back(task);
  }
  impl_->wake.notify_all();
  done.get_future().wait();
  return Status::Ok();
}

Status Engine::Impl::Validate(const RequestParams& p) const {
  if (p.prompt.empty()) return InvalidArgument("the prompt is empty");
  const int max_n = std::min(kMaxChoices, options.sched.max_num_seqs);
  if (p.n < 1 || p.n > max_n) {
    return InvalidArgument("n must be 1.." + std::to_string(max_n) + " (max_num_seqs " +
                           std::to_string(options.sched.max_num_seqs) + "), got " +
                           std::to_string(p.n));
  }
  if (p.max_tokens < 1) {
    return InvalidArgument("max_tokens must be >= 1, got " + std::to_string(p.max_tokens));
  }
  if (p.logprobs < 0 || p.logprobs > kMaxLogprobs) {
    return InvalidArgument("logprobs must be 0.." + std::to_string(kMaxLogprobs) + ", got " +
                           std::to_string(p.logprobs));
  }
  KV_RETURN_IF_ERROR(p.sampling.Validate());
  const int64_t vocab = model->n_vocab();
  for (size_t i = 0; i < p.prompt.size(); ++i) {
    if (p.prompt[i] < 0 || p.prompt[i] >= vocab) {
      return InvalidArgument("prompt token " + std::to_string(i) + " (id " +
                             std::to_string(p.prompt[i]) + ") is outside the vocabulary (" +
                             std::to_string(vocab) + " tokens)");
    }
  }
  for (int32_t t : p.stop_token_ids) {
    if (t < 0 || t >= vocab) {
      return InvalidArgument("stop token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(vocab) + " tokens)");
    }
  }
  const int64_t prompt = static_cast<int64_t>(p.prompt.size());
  const int64_t ctx = capacity.max_model_len;
  if (prompt > ctx || p.max_tokens > ctx - prompt) {
    return OutOfRange("the prompt (" + std::to_string(prompt) + " tokens) + max_tokens (" +
                      std::to_string(p.max_tokens) + ") exceed the context of " +
                      std::to_string(ctx) + " tokens");
  }
  return capacity.CheckRequestFits(prompt, p.max_tokens, p.n);
}

Result<RequestId> Engine::Submit(RequestParams params, EventCallback on_event) {
  Impl& m = *impl_;
  const Status valid = m.Validate(params);
  if (!valid.ok()) {
    m.rejected.fetch_add(1, std::memory_order_relaxed);
    return valid;
  }
  auto r = std::make_unique<engine_internal::ActiveRequest>();
  r->params = std::move(params);
  r->on_event = std::make_shared<const EventCallback>(std::move(on_event));
  r->arrival_ns = m.clock->NowNanos();
  for (int i = 0; i < r->params.n; ++i) {
    SamplingParams sp = r->params.sampling;
    sp.seed += static_cast<uint64_t>(i);
    r->choices.emplace_back(sp);
  }
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.stopping) {
      m.rejected.fetch_add(1, std::memory_order_relaxed);
      return Unavailable("the engine is stopped");
    }
    const int64_t pending = static_cast<int64_t>(m.inbox.size()) + m.waiting_in_loop.load();
    const int64_t pending_seqs = m.inbox_seqs + m.waiting_seqs_in_loop.load();
    const int64_t waiting = engine_internal::WaitingWith(
        pending, pending_seqs, m.running_seqs.load(), r->params.n, m.options.sched.max_num_seqs);
    if (waiting > m.options.max_queued_requests) {
      m.rejected.fetch_add(1, std::memory_order_relaxed);
      return Unavailable("the waiting queue is full (no free seat of " +
                         std::to_string(m.options.sched.max_num_seqs) + ", " +
                         std::to_string(waiting - 1) + " requests waiting, max_queued_requests " +
                         std::to_string(m.options.max_queued_requests) + "); retry later");
    }
    r->id = m.next_id.fetch_add(1);
    m.inbox_seqs += r->params.n;
    m.inbox.push_back(std::move(r));
    const RequestId id = m.inbox.back()->id;
    m.wake.notify_one();
    return id;
  }
}

void Engine::Cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cancels.push_back({id, Impl::kAllChoices});
  }
  impl_->wake.notify_one();
}

void Engine::StopChoice(RequestId id, int choice) {
  if (choice < 0) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cancels.push_back({id, choice});
  }
  impl_->wake.notify_one();
}

EngineStats Engine::Stats() const {
  EngineStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->stats_mu);
    s = impl_->published;
  }
  {
    // Queued: in the inbox, or taken by the loop and not running (counted as they are taken,
    // not only when the step that took them publishes).
    std::lock_guard<std::mutex> lock(impl_->mu);
    s.requests_waiting = static_cast<int64_t>(impl_->inbox.size()) + impl_->waiting_in_loop.load();
  }
  s.requests_rejected_total = impl_->rejected.load(std::memory_order_relaxed);
  return s;
}

std::string Engine::DescribeCapacity() const { return impl_->capacity.Describe(); }

}  // namespace kvengine
