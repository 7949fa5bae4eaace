// Scheduler bookkeeping: sequences in and out, forks, tokens and completed chunks. The per-step
// policy (what runs, what is preempted, what is admitted) is in scheduler_step.cc.
#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>

#include "kv/pool_sizing.h"

namespace kvengine {

const char* SeqStatusName(SeqStatus status) {
  switch (status) {
    case SeqStatus::kWaiting:
      return "waiting";
    case SeqStatus::kRunning:
      return "running";
  }
  return "?";
}

const char* PreemptionModeName(PreemptionMode mode) {
  switch (mode) {
    case PreemptionMode::kRecompute:
      return "recompute";
  }
  return "?";
}

const char* StepPolicyName(StepPolicy policy) {
  switch (policy) {
    case StepPolicy::kMixed:
      return "mixed";
    case StepPolicy::kPrefillFirst:
      return "prefill-first";
  }
  return "?";
}

Status SchedulerOptions::Validate() const {
  if (max_num_seqs < 1) {
    return InvalidArgument("max_num_seqs must be >= 1, got " + std::to_string(max_num_seqs));
  }
  if (max_num_batched_tokens < max_num_seqs) {
    return InvalidArgument("max_num_batched_tokens (" + std::to_string(max_num_batched_tokens) +
                           ") must be >= max_num_seqs (" + std::to_string(max_num_seqs) +
                           ") so that every running sequence can decode in one step");
  }
  if (!(admission_watermark >= 0 && admission_watermark < 1)) {
    return InvalidArgument("admission_watermark must be in [0, 1), got " +
                           std::to_string(admission_watermark));
  }
  return Status::Ok();
}

Scheduler::Scheduler(KvCacheManager* kv, SchedulerOptions options, const Clock* clock)
    : kv_(kv), options_(options), clock_(clock) {
  KV_CHECK(kv_ != nullptr && clock_ != nullptr);
  const Status s = options_.Validate();
  KV_CHECK(s.ok()) << s.ToString();
  for (int g = 0; g < kv_->num_groups(); ++g) {
    reserve_blocks_.push_back(
        BlocksPerSequence(kv_->group(g).spec(), kv_->block_size(), kv_->config().max_model_len));
    const double blocks = static_cast<double>(kv_->group(g).pool().num_blocks());
    watermark_blocks_.push_back(static_cast<int64_t>(std::ceil(options_.admission_watermark * blocks)));
  }
}

Status Scheduler::Add(NewSequence seq) {
  if (seqs_.count(seq.id)) return InvalidArgument("sequence " + std::to_string(seq.id) + " exists");
  if (seq.prompt.empty())
    return InvalidArgument("sequence " + std::to_string(seq.id) + ": empty prompt");
  if (seq.seats < 1 || seq.seats > options_.max_num_seqs) {
    return InvalidArgument("sequence " + std::to_string(seq.id) + " needs " +
                           std::to_string(seq.seats) + " seats; max_num_seqs is " +
                           std::to_string(options_.max_num_seqs));
  }
  auto s = std::make_unique<SchedSequence>();
  s->id = seq.id;
  s->priority = seq.priority;
  s->arrival_ns = clock_->NowNanos();
  s->arrival_seq = next_arrival_seq_++;
  s->cache_salt = std::move(seq.cache_salt);
  s->tokens = std::move(seq.prompt);
  s->prompt_len = static_cast<int64_t>(s->tokens.size());
  s->seats = seq.seats;
  s->status = SeqStatus::kWaiting;
  Insert(&waiting_, s.get());
  seqs_.emplace(seq.id, std::move(s));
  return Status::Ok();
}

void Scheduler::Complete(const SchedulerOutput& out) {
  for (const ScheduledChunk& c : out.chunks) {
    SchedSequence& s = Get(c.seq);
    KV_CHECK(s.status == SeqStatus::kRunning && s.num_computed == c.start_pos)
        << "chunk of sequence " << c.seq << " does not continue its computed tokens";
    const int64_t end = c.start_pos + c.num_tokens;
    const Status st = kv_->MarkComputed(c.seq, end);
    KV_CHECK(st.ok()) << st.ToString();
    s.num_computed = end;
  }
}

void Scheduler::AppendToken(SeqId seq, int32_t token) {
  SchedSequence& s = Get(seq);
  KV_CHECK(s.status == SeqStatus::kRunning && s.remaining() == 0)
      << "sequence " << seq << " has tokens left to compute";
  s.tokens.push_back(token);
}

Status Scheduler::Fork(SeqId parent, SeqId child) {
  SchedSequence& p = Get(parent);
  if (p.status != SeqStatus::kRunning || p.remaining() != 0) {
    return InvalidArgument("fork of sequence " + std::to_string(parent) +
                           " before all its tokens are computed");
  }
  if (seqs_.count(child)) return InvalidArgument("sequence " + std::to_string(child) + " exists");
  const bool own_seat = p.seats > 1;
  if (!own_seat && seats_running_ >= options_.max_num_seqs) {
    return Unavailable("no free seat for a fork of sequence " + std::to_string(parent));
  }
  KV_RETURN_IF_ERROR(kv_->Fork(parent, child));
  auto c = std::make_unique<SchedSequence>(p);
  c->id = child;
  c->seats = 1;
  c->num_preemptions = 0;
  if (own_seat) {
    --p.seats;
  } else {
    ++seats_running_;
  }
  Insert(&running_, c.get());
  seqs_.emplace(child, std::move(c));
  return Status::Ok();
}

bool Scheduler::Remove(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  SchedSequence* s = it->second.get();
  switch (s->status) {
    case SeqStatus::kRunning:
      Erase(&running_, s);
      seats_running_ -= s->seats;
      break;
    case SeqStatus::kWaiting:
      Erase(&waiting_, s);
      break;
  }
  kv_->Release(seq);  // No-op for a waiting sequence (it holds no KV).
  seqs_.erase(it);
  return true;
}

const SchedSequence* Scheduler::Find(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : it->second.get();
}

std::span<const int32_t> Scheduler::Tokens(SeqId seq) const {
  const SchedSequence* s = Find(seq);
  KV_CHECK(s != nullptr) << "unknown sequence " << seq;
  return s->tokens;
}

std::vector<SeqId> Scheduler::RunningIds() const {
  std::vector<SeqId> ids;
  for (const SchedSequence* s : running_) ids.push_back(s->id);
  return ids;
}

std::vector<SeqId> Scheduler::WaitingIds() const {
  std::vector<SeqId> ids;
  for (const SchedSequence* s : waiting_) ids.push_back(s->id);
  return ids;
}

void Scheduler::Insert(SeqList* list, SchedSequence* s) {
  auto pos = std::upper_bound(
      list->begin(), list->end(), s,
      [](const SchedSequence* a, const SchedSequence* b) { return ServedBefore(*a, *b); });
  list->insert(pos, s);
}

void Scheduler::Erase(SeqList* list, const SchedSequence* s) {
  auto it = std::find(list->begin(), list->end(), s);
  KV_CHECK(it != list->end());
  list->erase(it);
}

SchedSequence& Scheduler::Get(SeqId seq) {
  auto it = seqs_.find(seq);
  KV_CHECK(it != seqs_.end()) << "unknown sequence " << seq;
  return *it->second;
}

}  // namespace kvengine
