// The KV offload tier benchmark (`kvengine bench tiers`, docs/bench-tiers.md): the time to first
// token of one repeated long prompt when its KV is
//   (a) recompute  nowhere: the first submission computes every prompt token;
//   (b) pool       still cached in the engine's block pool;
//   (c) ram        only in the host-RAM tier   (Engine::Offload(OffloadTo::kRam) before it);
//   (d) disk       only on the disk tier       (Offload(kDisk): RAM spilled to disk, emptied);
//   (e) redis      only in Redis               (Offload(kBelowDisk): RAM emptied, no spill;
//                                               Redis holds every completed block, policy all).
// They run in the order a, b, c, e, d (disk last, so that the disk tier is empty while Redis is
// measured and the Redis row cannot be served from disk). TTFT is the wall time from Submit to
// the request's first token event; (b)-(e) run `repeat` times each (the Offload before every
// run) and report the median.
//
// Beside each tier row: the bytes it read from its tier and the rate the tier measured for them
// (TierStats bandwidth), next to the raw bandwidth of the same medium measured in the same run
// with the same count and size of values (raw_bandwidth.h): memcpy for RAM, a sequential
// O_DIRECT read of a file in the disk tier's directory for disk, a pipelined GET for Redis.
//
// The engine is the caller's EngineOptions with the bench's requirements on top (prefix caching,
// Redis write policy all, max_model_len >= prompt + 1). The disk tier's directory must be empty:
// anything there from an earlier run would turn the recompute row into a disk hit. Likewise the
// Redis key prefix must be unused; the bench deletes its keys at the end.
//
// Threading: call from one thread; the engine runs its own loop and tier I/O threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "model/model.h"
#include "bench/perf/raw_bandwidth.h"
#include "kvengine/engine.h"

namespace kvengine {

enum class TierScenario { kRecompute, kPool, kRam, kDisk, kRedis };
inline constexpr int kNumTierScenarios = 5;
// "recompute", "pool", "ram", "disk", "redis".
const char* TierScenarioName(TierScenario s);

struct TierBenchOptions {
  int64_t prompt_tokens = 4096;
  int repeat = 3;            // Runs of (b)-(e).
  int recompute_repeat = 1;  // Runs of (a); each extra one with another random prompt.
  int raw_passes = 3;        // Timed passes of each raw measurement.
  uint64_t seed = 1;         // Of the random prompt token ids.
  // The engine: pool, threads, batch limits, KV dtypes, and the tiers (tiers.ram_bytes and
  // tiers.disk_path are required; tiers.redis is optional, without it row (e) is skipped).
  EngineOptions engine;

  static constexpr const char* kPromptHelp = "Prompt tokens (random ids, fixed seed)";
  static constexpr const char* kRepeatHelp =
      "Runs of each of the pool, RAM, disk and Redis rows (the median TTFT is reported)";
  static constexpr const char* kRecomputeRepeatHelp =
      "Runs of the recompute row (each extra run prefills another random prompt)";
  static constexpr const char* kRawPassesHelp = "Timed passes of each raw-bandwidth measurement";
  static constexpr const char* kSeedHelp = "Seed of the random prompt";
};

struct TierBenchRow {
  TierScenario scenario = TierScenario::kRecompute;
  bool skipped = false;  // Not run (redis without an endpoint); `note` says why.
  // Tier rows: whether every run's prefix came from this tier (else `note` says what happened;
  // the figures are still reported).
  bool served = true;
  std::string note;
  std::vector<double> ttft_runs_s;
  double ttft_s = 0;  // Median of ttft_runs_s.
  double speedup_vs_recompute = 0;
  int64_t prompt_tokens_computed = 0;  // Per run (the most of any run).
  int64_t cached_tokens = 0;           // Prompt tokens served by the cache (the fewest).
  // Blocks (one per KV group and logical block) and bytes the row's tier read per run (RAM:
  // payloads copied into the pool; disk/Redis: records, header included). Pool: the blocks
  // reused in place, no bytes.
  uint64_t blocks = 0;
  uint64_t bytes = 0;
  // The tier's own measurement of its reads (TierStats::bandwidth_bytes_per_s after the row,
  // an EWMA: RAM per block copied, disk and Redis per prefetch including record checks), GB/s.
  double tier_gb_per_s = 0;
  // bytes / (ttft - the pool row's ttft): everything the tier path added to the first token.
  double effective_gb_per_s = 0;
  RawBandwidth raw;  // The same medium, same count and size of values, this run.
  double fraction_of_raw = 0;  // tier_gb_per_s / raw.gb_per_s.
};

// One target of the offload tiers (TTFT over recompute per tier; transfer over the medium's raw
// bandwidth); judged = false when its row did not run.
struct TierBenchTarget {
  std::string name;  // "RAM TTFT >= 10x faster than recompute", ...
  double value = 0;
  double goal = 0;
  bool judged = false;
  bool met = false;
};

struct TierBenchResult {
  TierBenchOptions options;
  std::string model;
  int threads = 0;
  int block_size = 0;
  uint64_t kv_bytes_per_token = 0;  // All groups.
  int64_t prefix_blocks = 0;        // Logical blocks a repeat can reuse: (prompt - 1) / block.
  std::string redis_endpoint;       // Empty: no Redis row.
  std::vector<TierBenchRow> rows;   // [TierScenario]: recompute, pool, ram, disk, redis.
  std::vector<TierBenchTarget> targets;
};

// One progress line (what ran, how long it took), for stderr.
using TierBenchLog = std::function<void(std::string_view line)>;

Result<TierBenchResult> RunTierBench(std::shared_ptr<const Model> model, std::string model_name,
                                     const TierBenchOptions& options, const TierBenchLog& log = {});

// The offload tiers' targets, judged from the rows: RAM >= 10x and disk >= 5x faster TTFT than
// recompute; each tier's transfer >= 0.8 of its medium's raw bandwidth.
std::vector<TierBenchTarget> TierBenchTargets(const std::vector<TierBenchRow>& rows);

}  // namespace kvengine
