#include "bench/kv/kv_backend.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "base/size_parse.h"
#include "bench/kv/contiguous_allocator.h"

namespace kvengine {

namespace {

// The paged policies: KvCacheManager over a metadata-only pool. A prefill is Append(prompt) +
// MarkComputed(all), so full prompt blocks enter the prefix cache at once; a decode step is
// Append(token) + MarkComputed(all).
class PagedBackend final : public KvBackend {
 public:
  PagedBackend(std::unique_ptr<KvCacheManager> manager, double watermark)
      : manager_(std::move(manager)) {
    for (int32_t n : manager_->sizing().num_blocks) {
      watermark_blocks_.push_back(static_cast<int32_t>(std::ceil(watermark * n)));
    }
  }

  bool Admit(SeqId seq, std::span<const int32_t> tokens, int64_t* cached_tokens) override {
    const Status added = manager_->AddSequence(seq);
    KV_CHECK(added.ok()) << added.ToString();
    if (!PlanFits(seq, tokens)) {
      manager_->Release(seq);  // The empty sequence holds nothing.
      return false;
    }
    const AppendResult r = manager_->Append(seq, tokens);
    KV_CHECK(r.ok) << "the plan said sequence " << seq << " fits";
    ++num_sequences_;
    *cached_tokens = r.prefix.cached_tokens;
    const Status computed = manager_->MarkComputed(seq, manager_->NumTokens(seq));
    KV_CHECK(computed.ok()) << computed.ToString();
    return true;
  }

  bool Decode(SeqId seq, int32_t token) override {
    if (!manager_->Append(seq, std::span<const int32_t>(&token, 1)).ok) return false;
    const Status computed = manager_->MarkComputed(seq, manager_->NumTokens(seq));
    KV_CHECK(computed.ok()) << computed.ToString();
    return true;
  }

  void Release(SeqId seq) override {
    if (!manager_->HasSequence(seq)) return;
    manager_->Release(seq);
    --num_sequences_;
  }

  KvOccupancy Occupancy() const override {
    // Stats() scans every block once: O(num_blocks) per call, affordable once per step.
    const KvStats st = manager_->Stats();
    return {st.tokens_stored, st.slots_allocated};
  }

  int64_t capacity_tokens() const override {
    int64_t blocks = 0;
    for (int32_t n : manager_->sizing().num_blocks) blocks = std::max<int64_t>(blocks, n);
    return blocks * manager_->block_size();
  }

  bool Idle() const override {
    const KvStats st = manager_->Stats();
    if (st.num_sequences != 0 || st.slots_allocated != 0) return false;
    for (const KvGroupStats& g : st.groups) {
      if (g.used_blocks != 0 || g.free_blocks + g.cached_blocks != g.capacity_blocks) return false;
    }
    return true;
  }

 private:
  // Whether fresh sequence `seq` fits with all of `tokens` and, while others run, leaves
  // watermark_blocks_[g] blocks available in every group g (the scheduler's admission rule).
  bool PlanFits(SeqId seq, std::span<const int32_t> tokens) const {
    const AppendRequest req{seq, tokens};
    const StepPlan p = manager_->PlanStep(std::span(&req, 1));
    if (!p.fits) return false;
    if (num_sequences_ == 0) return true;
    for (size_t g = 0; g < p.new_blocks.size(); ++g) {
      const int64_t taken = int64_t{p.new_blocks[g]} + p.revived_blocks[g];
      if (taken + watermark_blocks_[g] > p.available[g]) return false;
    }
    return true;
  }

  std::unique_ptr<KvCacheManager> manager_;
  std::vector<int32_t> watermark_blocks_;  // [group] blocks admission leaves available.
  int64_t num_sequences_ = 0;              // Sequences holding blocks.
};

// The contiguous policy: one region of max_model_len slots per sequence, reserved at admission.
class ContiguousBackend final : public KvBackend {
 public:
  ContiguousBackend(int32_t regions, int64_t max_model_len) : alloc_(regions, max_model_len) {}

  bool Admit(SeqId seq, std::span<const int32_t> tokens, int64_t* cached_tokens) override {
    KV_CHECK(!region_.count(seq)) << "sequence " << seq << " exists";
    if (static_cast<int64_t>(tokens.size()) > alloc_.region_tokens()) return false;
    const int32_t r = alloc_.Reserve();
    if (r < 0) return false;
    KV_CHECK(alloc_.Grow(r, static_cast<int64_t>(tokens.size())));
    region_.emplace(seq, r);
    *cached_tokens = 0;
    return true;
  }

  bool Decode(SeqId seq, int32_t /*token*/) override { return alloc_.Grow(Region(seq), 1); }

  void Release(SeqId seq) override {
    auto it = region_.find(seq);
    if (it == region_.end()) return;
    alloc_.Free(it->second);
    region_.erase(it);
  }

  KvOccupancy Occupancy() const override { return {alloc_.tokens_held(), alloc_.reserved_slots()}; }
  int64_t capacity_tokens() const override { return alloc_.capacity_slots(); }
  bool Idle() const override {
    return region_.empty() && alloc_.num_free() == alloc_.num_regions() &&
           alloc_.tokens_held() == 0;
  }

 private:
  int32_t Region(SeqId seq) const {
    auto it = region_.find(seq);
    KV_CHECK(it != region_.end()) << "unknown sequence " << seq;
    return it->second;
  }

  ContiguousAllocator alloc_;
  std::unordered_map<SeqId, int32_t> region_;  // Sequence -> its region.
};

}  // namespace

std::string_view KvPolicyName(KvPolicy policy) {
  switch (policy) {
    case KvPolicy::kPagedPrefix:
      return "paged_prefix";
    case KvPolicy::kPagedNoPrefix:
      return "paged_no_prefix";
    case KvPolicy::kContiguous:
      return "contiguous";
  }
  return "?";
}

Result<KvPolicy> ParseKvPolicy(std::string_view name) {
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (KvPolicy p : kAllKvPolicies) {
    if (n == KvPolicyName(p)) return p;
  }
  return InvalidArgument("unknown KV policy '" + std::string(name) +
                         "' (expected paged_prefix, paged_no_prefix or contiguous)");
}

Result<std::unique_ptr<KvBackend>> MakeKvBackend(KvPolicy policy, const KvBackendConfig& config) {
  if (config.groups.empty()) return InvalidArgument("the model has no KV group");
  if (config.max_model_len < 1) return InvalidArgument("max_model_len must be >= 1");
  if (!(config.admission_watermark >= 0 && config.admission_watermark < 1)) {
    return InvalidArgument("admission watermark must be in [0, 1)");
  }
  const std::string too_small = "KV budget " + FormatBytes(config.memory_bytes) +
                                " cannot hold one sequence of max_model_len " +
                                std::to_string(config.max_model_len) + " tokens";
  switch (policy) {
    case KvPolicy::kPagedPrefix:
    case KvPolicy::kPagedNoPrefix: {
      KvCacheConfig c;
      c.groups = config.groups;
      c.block_size = config.block_size;
      c.memory_bytes = config.memory_bytes;
      c.max_model_len = config.max_model_len;
      c.enable_prefix_caching = policy == KvPolicy::kPagedPrefix;
      c.model_fingerprint = config.model_fingerprint;
      c.allocate_storage = false;
      KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCacheManager> m, KvCacheManager::Create(std::move(c)));
      // One full-length sequence must fit in an otherwise empty pool, or a request could wait
      // (or be preempted) forever.
      const PoolSizing& s = m->sizing();
      for (size_t g = 0; g < s.num_blocks.size(); ++g) {
        if (s.blocks_per_seq[g] > s.num_blocks[g]) return OutOfRange(too_small);
      }
      return std::unique_ptr<KvBackend>(new PagedBackend(std::move(m), config.admission_watermark));
    }
    case KvPolicy::kContiguous: {
      if (config.block_size < 1 || config.block_size > 256) {
        return InvalidArgument("block size must be 1..256 tokens");
      }
      const int32_t regions = ContiguousAllocator::RegionsFor(
          config.groups, config.block_size, config.memory_bytes, config.max_model_len);
      if (regions < 1) return OutOfRange(too_small);
      return std::unique_ptr<KvBackend>(new ContiguousBackend(regions, config.max_model_len));
    }
  }
  return Internal("unknown KV policy");
}

}  // namespace kvengine
