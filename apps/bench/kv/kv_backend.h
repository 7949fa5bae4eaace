// KvBackend: a KV memory policy as the workload simulator sees it — admit a sequence with its
// prompt, grow it one decoded token at a time, release it, and report occupancy.
//
//   paged_prefix     the real KvCacheManager (metadata-only pool), prefix caching on
//   paged_no_prefix  the same manager, prefix caching off
//   contiguous       ContiguousAllocator: max_model_len slots reserved per sequence up front
//
// All three spend the same byte budget at the same bytes per token (the paged pool's exact
// BlockLayout figure), so only the policy differs.
//
// Owner: one simulation run; single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "kv/group_spec.h"
#include "kv/kv_cache_manager.h"

namespace kvengine {

enum class KvPolicy : uint8_t { kPagedPrefix, kPagedNoPrefix, kContiguous };

inline constexpr KvPolicy kAllKvPolicies[] = {KvPolicy::kPagedPrefix, KvPolicy::kPagedNoPrefix,
                                              KvPolicy::kContiguous};

// "paged_prefix", "paged_no_prefix", "contiguous".
std::string_view KvPolicyName(KvPolicy policy);
// The names above; '-' may stand for '_'.
Result<KvPolicy> ParseKvPolicy(std::string_view name);

// Token slots in use at one moment.
struct KvOccupancy {
  int64_t tokens_stored = 0;    // Slots holding a token's KV (a shared block counts once).
  int64_t slots_allocated = 0;  // Slots taken from the pool: used blocks x block size, or
                                // reserved regions x max_model_len.
};

struct KvBackendConfig {
  std::vector<KvGroupSpec> groups;  // From BuildKvGroups; at least one.
  int block_size = 16;
  uint64_t memory_bytes = 0;      // The KV budget every policy gets.
  int64_t max_model_len = 4096;   // Longest sequence (prompt + output).
  std::string model_fingerprint;  // Prefix-cache namespace (the model's name is enough here).
  // Paged policies: a new sequence is admitted only if it leaves at least this fraction of each
  // group's blocks available (free or evictable) for running sequences to grow into, as vLLM's
  // block-manager watermark does; waived when no sequence runs. Without it, admission takes
  // every block a completion frees, the next decode step preempts at once, and the blocks the
  // finished sequence left in the prefix cache are the next ones eaten.
  double admission_watermark = 0.0;
};

class KvBackend {
 public:
  virtual ~KvBackend() = default;

  // Stores and computes all of `tokens` as the start of new sequence `seq` (a prefill). false:
  // it does not fit now, and nothing changed. *cached_tokens: how many of them the prefix cache
  // served (0 without one).
  virtual bool Admit(SeqId seq, std::span<const int32_t> tokens, int64_t* cached_tokens) = 0;
  // Appends one decoded token to `seq`. false: out of space, nothing changed.
  virtual bool Decode(SeqId seq, int32_t token) = 0;
  // Frees everything `seq` holds (cached blocks stay findable for paged_prefix).
  virtual void Release(SeqId seq) = 0;

  virtual KvOccupancy Occupancy() const = 0;
  // Token slots of the whole budget (paged: blocks x block size of the largest group).
  virtual int64_t capacity_tokens() const = 0;
  // No sequence exists and no slot is allocated: the check that nothing leaked.
  virtual bool Idle() const = 0;
};

// Errors when the budget cannot hold even one sequence of max_model_len tokens (the simulation
// could never make progress), or when the manager rejects the configuration.
Result<std::unique_ptr<KvBackend>> MakeKvBackend(KvPolicy policy, const KvBackendConfig& config);

}  // namespace kvengine
