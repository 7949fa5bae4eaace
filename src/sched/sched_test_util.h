// Model-free fixtures for the scheduler tests: a metadata-only KvCacheManager (no KV bytes) and
// a fake engine loop that "samples" a token derived from the sequence so far.
#pragma once

#include <map>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "kv/kv_cache_manager.h"
#include "sched/scheduler.h"

namespace kvengine::sched_test {

inline constexpr int kBlock = 4;  // Tokens per block in these tests.

inline std::unique_ptr<KvCacheManager> MakeFakeKv(int32_t blocks, int64_t max_model_len = 64,
                                                  bool prefix_caching = true) {
  KvGroupSpec g;
  g.kind = KvGroupKind::kFull;
  g.layers = {0};
  g.num_kv_heads = 1;
  g.head_dim_k = g.head_dim_v = 4;
  g.dtypes = {LayerKvDtypes{KvDtype::kF32, KvDtype::kF32}};
  KvCacheConfig c;
  c.groups = {g};
  c.block_size = kBlock;
  c.num_blocks = blocks;
  c.max_model_len = max_model_len;
  c.enable_prefix_caching = prefix_caching;
  c.allocate_storage = false;
  auto kv = KvCacheManager::Create(c);
  KV_CHECK(kv.ok()) << kv.status().ToString();
  return std::move(kv).value();
}

// Tokens from..from+n-1.
inline std::vector<int32_t> Toks(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

inline int32_t UsedBlocks(const KvCacheManager& kv) { return kv.Stats().groups[0].used_blocks; }

inline SchedulerOptions Opts(int max_seqs, int64_t budget) {
  SchedulerOptions o;
  o.max_num_seqs = max_seqs;
  o.max_num_batched_tokens = budget;
  o.admission_watermark = 0;  // Tests count blocks exactly; the watermark has its own test.
  return o;
}

// Stands in for the engine: runs the model (does nothing), samples a token that depends only on
// the sequence's tokens (so a recomputed sequence continues identically), and removes a
// sequence once it has `max_new` tokens. Checks the scheduler's invariants every step.
class FakeLoop {
 public:
  FakeLoop(Scheduler* sched, KvCacheManager* kv) : sched_(sched), kv_(kv) {}

  void Add(SeqId id, std::vector<int32_t> prompt, int64_t max_new, int priority = 0,
           int seats = 1) {
    max_new_[id] = max_new;
    prompt_len_[id] = static_cast<int64_t>(prompt.size());
    NewSequence s;
    s.id = id;
    s.prompt = std::move(prompt);
    s.priority = priority;
    s.seats = seats;
    ASSERT_TRUE(sched_->Add(std::move(s)).ok());
  }

  SchedulerOutput Step() {
    SchedulerOutput out = sched_->Schedule();
    EXPECT_LE(out.num_tokens, sched_->options().max_num_batched_tokens);
    EXPECT_LE(sched_->seats_running(), sched_->options().max_num_seqs);
    for (const ScheduledChunk& c : out.chunks) {
      EXPECT_EQ(kv_->NumTokens(c.seq), c.start_pos + c.num_tokens) << "seq " << c.seq;
    }
    sched_->Complete(out);
    for (const ScheduledChunk& c : out.chunks) {
      if (!c.samples) continue;
      const auto toks = sched_->Tokens(c.seq);
      const int64_t generated = static_cast<int64_t>(toks.size()) - prompt_len_[c.seq];
      if (generated >= max_new_[c.seq]) {
        outputs_[c.seq].assign(toks.begin(), toks.end());
        sched_->Remove(c.seq);
        finished_.push_back(c.seq);
        continue;
      }
      int64_t h = 7;
      for (int32_t t : toks) h = (h * 31 + t) % 1000;
      sched_->AppendToken(c.seq, static_cast<int32_t>(100 + h));
    }
    for (SeqId id : sched_->RunningIds()) {
      EXPECT_EQ(kv_->NumComputed(id), sched_->Find(id)->num_computed);
    }
    return out;
  }

  // Steps until idle (at most `limit` steps); returns the number of steps.
  int RunToIdle(int limit = 1000) {
    int steps = 0;
    while (!sched_->idle() && steps < limit) {
      Step();
      ++steps;
    }
    EXPECT_TRUE(sched_->idle());
    return steps;
  }

  const std::vector<SeqId>& finished() const { return finished_; }
  // Every token of each finished sequence.
  const std::map<SeqId, std::vector<int32_t>>& outputs() const { return outputs_; }

 private:
  Scheduler* sched_;
  KvCacheManager* kv_;
  std::map<SeqId, int64_t> max_new_;
  std::map<SeqId, int64_t> prompt_len_;
  std::vector<SeqId> finished_;
  std::map<SeqId, std::vector<int32_t>> outputs_;
};

// A scheduler over `kv` with a manual clock, and the FakeLoop that drives it. Tests name its
// parts with `auto& [kv, clock, sched, loop] = h;`.
struct FakeScheduler {
  FakeScheduler(std::unique_ptr<KvCacheManager> kv_cache, const SchedulerOptions& o)
      : kv(std::move(kv_cache)), sched(kv.get(), o, &clock), loop(&sched, kv.get()) {}

  std::unique_ptr<KvCacheManager> kv;
  ManualClock clock;
  Scheduler sched;
  FakeLoop loop;
};

}  // namespace kvengine::sched_test
