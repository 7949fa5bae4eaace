// Scheduler::Schedule: one step's plan — running sequences first (decodes and prefill chunks
// under the token budget, preempting when blocks run out), then admissions. Every chunk is a
// dry run against the KV manager (PlanStep) before its commit (Append).
#include <algorithm>

#include "sched/scheduler.h"

namespace kvengine {

SchedulerOutput Scheduler::Schedule() {
  SchedulerOutput out;
  int64_t budget = options_.max_num_batched_tokens;
  const bool prefill_first = options_.step_policy == StepPolicy::kPrefillFirst;
  if (prefill_first) {
    ScheduleRunning(&budget, &out, /*decodes=*/false);
    if (out.preempted.empty()) Admit(&budget, &out);
    if (!out.chunks.empty()) return out;
    // No prompt work fits now (preemptions so far stand): a step of decodes. Admission was
    // tried with the whole budget and every block, so it is not tried again behind them.
  }
  ScheduleRunning(&budget, &out, /*decodes=*/true);
  // A step that had to preempt is short of blocks: admitting now would only preempt again.
  if (!prefill_first && out.preempted.empty()) Admit(&budget, &out);
  return out;
}

namespace {

// The tokens to append to compute [from, from + n) of `s`. A fresh sequence (admitted) appends
// its cached prefix [0, from) too: Append adopts those blocks instead of computing them.
std::span<const int32_t> AppendSpan(const SchedSequence& s, bool admitted, int64_t from,
                                    int64_t n) {
  const size_t first = admitted ? 0 : size_t(from);
  return std::span<const int32_t>(s.tokens).subspan(first, size_t(from + n) - first);
}

}  // namespace

bool Scheduler::Fits(const SchedSequence& s, bool admitted, int64_t from, int64_t n) const {
  const AppendRequest req{s.id, AppendSpan(s, admitted, from, n)};
  return kv_->PlanStep(std::span(&req, 1)).fits;
}

bool Scheduler::FitsAboveWatermark(const SchedSequence& s, int64_t from, int64_t n) const {
  const AppendRequest req{s.id, AppendSpan(s, /*admitted=*/true, from, n)};
  const StepPlan p = kv_->PlanStep(std::span(&req, 1));
  if (!p.fits) return false;
  for (size_t g = 0; g < p.new_blocks.size(); ++g) {
    const int64_t taken = int64_t{p.new_blocks[g]} + p.revived_blocks[g];
    if (taken + watermark_blocks_[g] > p.available[g]) return false;
  }
  return true;
}

int64_t Scheduler::LargestFit(const SchedSequence& s, bool admitted, int64_t from,
                              int64_t want) const {
  if (Fits(s, admitted, from, want)) return want;
  // Blocks needed grow with the chunk, so "fits" is monotone: binary search the largest.
  int64_t lo = 0, hi = want;  // Invariant: lo == 0 or fits(lo); !fits(hi).
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (Fits(s, admitted, from, mid) ? lo : hi) = mid;
  }
  return lo;
}

void Scheduler::Commit(SchedSequence* s, int64_t from, int64_t n, bool admitted,
                       SchedulerOutput* out) {
  const AppendResult r = kv_->Append(s->id, AppendSpan(*s, admitted, from, n));
  KV_CHECK(r.ok) << "the plan said sequence " << s->id << " fits";
  if (admitted) {
    KV_CHECK(r.prefix.cached_tokens == from)
        << "prefix hits changed between plan and commit: " << r.prefix.cached_tokens << " vs "
        << from;
    s->num_computed = from;
  }
  const bool samples = from + n == static_cast<int64_t>(s->tokens.size());
  out->chunks.push_back(ScheduledChunk{s->id, from, n, samples, admitted});
  out->num_tokens += n;
}

void Scheduler::Preempt(SchedSequence* victim, SchedulerOutput* out) {
  switch (options_.preemption_mode) {
    case PreemptionMode::kRecompute:
      // Full computed blocks stay findable in the prefix cache until evicted.
      kv_->Release(victim->id);
      victim->num_computed = 0;
      break;
  }
  Erase(&running_, victim);
  seats_running_ -= victim->seats;
  victim->status = SeqStatus::kWaiting;
  ++victim->num_preemptions;
  ++num_preemptions_;
  Insert(&waiting_, victim);
  out->preempted.push_back(victim->id);
}

void Scheduler::ScheduleRunning(int64_t* budget, SchedulerOutput* out, bool decodes) {
  // Budget held back for decodes (one token each) not reached yet, so prefill chunks ahead of
  // them in service order cannot take the whole step.
  int64_t pending_decodes = 0;
  if (decodes) {
    for (const SchedSequence* s : running_) pending_decodes += s->remaining() == 1;
  }
  size_t i = 0;
  while (i < running_.size() && *budget > 0) {
    SchedSequence* s = running_[i];
    KV_CHECK(s->remaining() >= 1) << "running sequence " << s->id << " has nothing to compute";
    const bool decode = s->remaining() == 1;
    if (decode && !decodes) {
      ++i;
      continue;
    }
    const int64_t want = decode ? 1 : std::min(s->remaining(), *budget - pending_decodes);
    if (want <= 0) {  // A prefill whose share of this step went to the decodes behind it.
      ++i;
      continue;
    }
    const int64_t n = LargestFit(*s, /*admitted=*/false, s->num_computed, want);
    if (n == 0) {
      // Out of blocks: the last in service order goes (lowest priority, latest arrival). It is
      // never one already scheduled this step, as those come before s. If it is s itself, s
      // was the last and the loop ends.
      SchedSequence* victim = running_.back();
      if (decodes && victim->remaining() == 1) --pending_decodes;
      Preempt(victim, out);
      continue;
    }
    if (decode) --pending_decodes;
    Commit(s, s->num_computed, n, /*admitted=*/false, out);
    *budget -= n;
    ++i;
  }
}

bool Scheduler::ReservationFits(const SchedSequence& s) const {
  for (int g = 0; g < kv_->num_groups(); ++g) {
    const int64_t capacity = kv_->group(g).pool().num_blocks();
    if (int64_t(seats_running_ + s.seats) * reserve_blocks_[size_t(g)] > capacity) return false;
  }
  return true;
}

void Scheduler::Admit(int64_t* budget, SchedulerOutput* out) {
  while (!waiting_.empty() && *budget > 0) {
    SchedSequence* s = waiting_.front();
    if (seats_running_ + s->seats > options_.max_num_seqs) return;
    if (options_.contiguous_reservation && !ReservationFits(*s)) return;
    const Status added = kv_->AddSequence(s->id, s->cache_salt);
    KV_CHECK(added.ok()) << added.ToString();
    switch (options_.preemption_mode) {
      case PreemptionMode::kRecompute:
        break;  // Nothing kept: the prefix cache serves what it still holds.
    }
    const int64_t len = static_cast<int64_t>(s->tokens.size());
    // One token always runs (its logits choose the next one), so at most len - 1 are cached.
    const int64_t cached = kv_->LookupPrefix(s->tokens, s->cache_salt, len - 1).cached_tokens;
    const int64_t want = std::min(len - cached, *budget);
    // The first chunk must fit whole above the watermark, unless nothing else runs (then no
    // one frees blocks and the watermark protects no one). Contiguous reservation already
    // guarantees every running seat room to grow.
    int64_t n = 0;
    if (running_.empty()) {
      n = LargestFit(*s, /*admitted=*/true, cached, want);
    } else if (options_.contiguous_reservation ? Fits(*s, /*admitted=*/true, cached, want)
                                               : FitsAboveWatermark(*s, cached, want)) {
      n = want;
    }
    if (n == 0) {
      kv_->Release(s->id);  // Holds nothing yet.
      return;
    }
    Commit(s, cached, n, /*admitted=*/true, out);
    *budget -= n;
    waiting_.erase(waiting_.begin());
    s->status = SeqStatus::kRunning;
    seats_running_ += s->seats;
    Insert(&running_, s);
    if (s->first_cached_tokens < 0) {
      s->first_cached_tokens = cached;
      s->first_scheduled_ns = clock_->NowNanos();
    }
  }
}

}  // namespace kvengine
