#include "bench/perf/tier_bench.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "base/thread_pool.h"
#include "bench/perf/bench_rounds.h"
#include "tier/block_record.h"

namespace kvengine {

const char* TierScenarioName(TierScenario s) {
  switch (s) {
    case TierScenario::kRecompute:
      return "recompute";
    case TierScenario::kPool:
      return "pool";
    case TierScenario::kRam:
      return "ram";
    case TierScenario::kDisk:
      return "disk";
    case TierScenario::kRedis:
      return "redis";
  }
  return "?";
}

namespace {

using SteadyTime = std::chrono::steady_clock;

std::string MiB(uint64_t b) { return fmt::format("{:.1f} MiB", double(b) / double(1 << 20)); }

// The (a)-(e) letter of a scenario in the list.
char Letter(TierScenario s) { return char('a' + int(s)); }

std::vector<int32_t> RandomPrompt(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int32_t& t : p) t = int32_t(rng() % uint64_t(vocab));
  return p;
}

// One request's first-token time and its end, written by the engine thread's event callback.
struct Watch {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<SteadyTime::time_point> first_token;  // Guarded by mu.
  bool finished = false;                              // Guarded by mu.
  RequestEvent final_event;                           // Guarded by mu.
};

struct RunOnceResult {
  double ttft_s = 0;
  int64_t cached_tokens = 0;
};

// Submits `prompt` (one greedy token) and waits for its end. TTFT: Submit to the first token
// event, as a client sees it.
Result<RunOnceResult> RunOnce(Engine& engine, const std::vector<int32_t>& prompt) {
  auto watch = std::make_shared<Watch>();
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = 1;
  p.sampling.temperature = 0;
  p.ignore_eos = true;
  const SteadyTime::time_point t0 = SteadyTime::now();
  Result<RequestId> id = engine.Submit(std::move(p), [watch](const RequestEvent& e) {
    const SteadyTime::time_point now = SteadyTime::now();
    std::lock_guard<std::mutex> lock(watch->mu);
    if (e.has_token && !watch->first_token) watch->first_token = now;
    if (e.finish_reason != FinishReason::kNone) {
      watch->finished = true;
      watch->final_event = e;
      watch->cv.notify_all();
    }
  });
  if (!id.ok()) return id.status();
  std::unique_lock<std::mutex> lock(watch->mu);
  watch->cv.wait(lock, [&] { return watch->finished; });
  const RequestEvent& e = watch->final_event;
  if (e.finish_reason == FinishReason::kError) return Internal("the request failed: " + e.error);
  if (!watch->first_token) {
    return Internal(
        fmt::format("the request ended ({}) without a token", FinishReasonName(e.finish_reason)));
  }
  return RunOnceResult{std::chrono::duration<double>(*watch->first_token - t0).count(),
                       e.cached_prompt_tokens};
}

// What one run of a row did, from the engine's stats before its Offload and after its end.
struct RunRecord {
  double ttft_s = 0;
  int64_t computed = 0;                      // Prompt tokens the model ran.
  int64_t cached = 0;                        // Prompt tokens served by the pool or a tier.
  int64_t tier_tokens = 0;                   // Of those, copied in from a tier.
  uint64_t fills[kNumTierKinds] = {};        // Pool fills by the tier the block came from.
  uint64_t tier_blocks = 0, tier_bytes = 0;  // Read from the row's tier.
};

Result<RunRecord> MeasureRun(Engine& engine, const std::vector<int32_t>& prompt,
                             std::optional<OffloadTo> offload, std::optional<TierKind> tier) {
  // Published after the previous request's last step (its final event came after): exact.
  const EngineStats before = engine.Stats();
  if (offload) KV_RETURN_IF_ERROR(engine.Offload(*offload));
  KV_ASSIGN_OR_RETURN(const RunOnceResult r, RunOnce(engine, prompt));
  const EngineStats after = engine.Stats();
  RunRecord rec;
  rec.ttft_s = r.ttft_s;
  rec.cached = r.cached_tokens;
  rec.computed = after.prompt_tokens_computed_total - before.prompt_tokens_computed_total;
  rec.tier_tokens = after.kv.prefix_tier_hit_tokens - before.kv.prefix_tier_hit_tokens;
  for (int k = 0; k < kNumTierKinds; ++k) {
    rec.fills[k] = after.tiers.prefix_hit_blocks[k] - before.tiers.prefix_hit_blocks[k];
  }
  if (tier) {
    const TierCounters& a = after.tiers.tiers[size_t(*tier)];
    const TierCounters& b = before.tiers.tiers[size_t(*tier)];
    rec.tier_blocks = a.hits - b.hits;
    rec.tier_bytes = a.bytes_read - b.bytes_read;
  }
  return rec;
}

Status CheckOptions(const TierBenchOptions& o) {
  const int b = o.engine.kv.block_size;
  if (b < 1) return InvalidArgument("the block size must be >= 1");
  if (o.prompt_tokens < b + 1 || o.prompt_tokens > (int64_t{1} << 24)) {
    return OutOfRange(fmt::format(
        "--prompt-tokens must be {}..16777216: a repeat reuses (prompt - 1) / {} whole blocks, "
        "at least one",
        b + 1, b));
  }
  if (o.repeat < 1 || o.recompute_repeat < 1 || o.raw_passes < 1) {
    return InvalidArgument("repeat, recompute_repeat and raw_passes must be >= 1");
  }
  if (o.engine.tiers.ram_bytes == 0) return InvalidArgument("the bench needs a RAM tier");
  const std::string& dir = o.engine.tiers.disk_path;
  if (dir.empty()) return InvalidArgument("the bench needs a disk tier directory");
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    return InvalidArgument(fmt::format(
        "the disk tier directory {} is not empty (blocks of an earlier run would be disk hits)",
        dir));
  }
  return Status::Ok();
}

// Why a run was not what its row measures; empty when it was.
std::string CheckRun(TierScenario s, const RunRecord& rec, int64_t prompt, int64_t reusable) {
  std::string served_by;
  for (int k = 0; k < kNumTierKinds; ++k) {
    if (rec.fills[k] > 0) {
      served_by += fmt::format("{}{} blocks from {}", served_by.empty() ? "" : ", ", rec.fills[k],
                               TierKindName(TierKind(k)));
    }
  }
  const std::string what =
      fmt::format("{} of {} prompt tokens cached ({}), {} computed", rec.cached, prompt,
                  served_by.empty() ? "no tier" : served_by, rec.computed);
  switch (s) {
    case TierScenario::kRecompute:
      return rec.computed == prompt ? "" : what;
    case TierScenario::kPool:
      return rec.cached == reusable && rec.tier_tokens == 0 ? "" : what;
    case TierScenario::kRam:
    case TierScenario::kDisk:
    case TierScenario::kRedis: {
      const TierKind k = s == TierScenario::kRam    ? TierKind::kRam
                         : s == TierScenario::kDisk ? TierKind::kDisk
                                                    : TierKind::kRedis;
      uint64_t all = 0;
      for (uint64_t f : rec.fills) all += f;
      const bool ok = rec.cached == reusable && rec.tier_tokens == reusable &&
                      rec.fills[size_t(k)] > 0 && rec.fills[size_t(k)] == all;
      return ok ? "" : what;
    }
  }
  return what;
}

class Bench {
 public:
  Bench(Engine& engine, const TierBenchOptions& o, const TierBenchLog& log, int64_t reusable)
      : engine_(engine), o_(o), log_(log), reusable_(reusable) {}

  // Runs one row: `runs` times an optional Offload then `prompt`.
  Status Row(TierBenchRow* row, int runs, std::optional<OffloadTo> offload,
             std::optional<TierKind> tier, const std::vector<std::vector<int32_t>>& prompts) {
    std::vector<double> tier_bw;  // [run] bytes/s of the tier's transfer in that run.
    for (int i = 0; i < runs; ++i) {
      const std::vector<int32_t>& prompt = prompts[std::min(size_t(i), prompts.size() - 1)];
      KV_ASSIGN_OR_RETURN(const RunRecord rec, MeasureRun(engine_, prompt, offload, tier));
      row->ttft_runs_s.push_back(rec.ttft_s);
      row->prompt_tokens_computed = std::max(row->prompt_tokens_computed, rec.computed);
      row->cached_tokens = i == 0 ? rec.cached : std::min(row->cached_tokens, rec.cached);
      row->blocks = std::max(row->blocks, rec.tier_blocks);
      row->bytes = std::max(row->bytes, rec.tier_bytes);
      const std::string bad = CheckRun(row->scenario, rec, o_.prompt_tokens, reusable_);
      if (!bad.empty() && row->served) {
        row->served = false;
        row->note = fmt::format("run {}: {}", i + 1, bad);
      }
      std::string line = fmt::format("({}) {} run {}/{}: TTFT {:.3f} s, {} prompt tokens computed",
                                     Letter(row->scenario), TierScenarioName(row->scenario), i + 1,
                                     runs, rec.ttft_s, rec.computed);
      if (tier) {
        line += fmt::format(", {} blocks ({}) read from {}", rec.tier_blocks, MiB(rec.tier_bytes),
                            TierKindName(*tier));
      }
      if (!bad.empty()) line += " -- NOT as intended: " + bad;
      Log(line);
      if (tier) {
        // Disk and Redis: the run's one prefetch. RAM: the moving average of the run's block
        // copies (each block is its own transfer).
        const TierCounters& c = engine_.Stats().tiers.tiers[size_t(*tier)];
        tier_bw.push_back(*tier == TierKind::kRam ? c.bandwidth_bytes_per_s
                                                  : c.last_bandwidth_bytes_per_s);
      }
    }
    row->ttft_s = Median(row->ttft_runs_s);
    if (tier) row->tier_gb_per_s = Median(tier_bw) / 1e9;
    return Status::Ok();
  }

  // The raw figure of a row's medium; a failure is a note on the row, not the end of the run.
  void Raw(TierBenchRow* row, const Result<RawBandwidth>& raw) {
    if (!raw.ok()) {
      row->note += std::string(row->note.empty() ? "" : "; ") +
                   "raw measurement failed: " + raw.status().message();
      Log(fmt::format("({}) raw bandwidth: {}", Letter(row->scenario), raw.status().message()));
      return;
    }
    row->raw = *raw;
    if (raw->gb_per_s > 0) row->fraction_of_raw = row->tier_gb_per_s / raw->gb_per_s;
    Log(fmt::format("({}) raw {}: {} x {} bytes, {:.2f} GB/s (median of {}); tier {:.2f} GB/s",
                    Letter(row->scenario), raw->method, raw->count, raw->value_bytes, raw->gb_per_s,
                    raw->passes, row->tier_gb_per_s));
  }

  void Log(const std::string& line) const {
    if (log_) log_(line);
  }

 private:
  Engine& engine_;
  const TierBenchOptions& o_;
  const TierBenchLog& log_;
  const int64_t reusable_;
};

}  // namespace

Result<TierBenchResult> RunTierBench(std::shared_ptr<const Model> model, std::string model_name,
                                     const TierBenchOptions& options, const TierBenchLog& log) {
  KV_RETURN_IF_ERROR(CheckOptions(options));
  const int64_t vocab = model->n_vocab();
  EngineOptions eo = options.engine;
  eo.kv.enable_prefix_caching = true;
  eo.kv.max_model_len = std::max(eo.kv.max_model_len, options.prompt_tokens + 1);
  eo.tiers.redis_write = RedisWritePolicy::kAll;  // Row (e) needs every block in Redis.
  const std::string redis = eo.tiers.redis;
  const std::string redis_prefix = eo.tiers.redis_key_prefix;

  TierBenchResult res;
  res.options = options;
  res.model = std::move(model_name);
  res.threads = eo.threads > 0 ? eo.threads : ThreadPool::DefaultThreadCount();
  res.block_size = eo.kv.block_size;
  res.prefix_blocks = (options.prompt_tokens - 1) / eo.kv.block_size;
  res.redis_endpoint = redis;
  for (int s = 0; s < kNumTierScenarios; ++s) {
    TierBenchRow row;
    row.scenario = TierScenario(s);
    res.rows.push_back(std::move(row));
  }
  TierBenchRow& recompute = res.rows[size_t(TierScenario::kRecompute)];
  TierBenchRow& pool = res.rows[size_t(TierScenario::kPool)];
  TierBenchRow& ram = res.rows[size_t(TierScenario::kRam)];
  TierBenchRow& disk = res.rows[size_t(TierScenario::kDisk)];
  TierBenchRow& red = res.rows[size_t(TierScenario::kRedis)];
  {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(std::move(model), eo));
    engine->Start();
    const EngineStats s0 = engine->Stats();
    const uint64_t groups = s0.kv.groups.size();
    uint64_t block_bytes = 0;  // All groups.
    for (const KvGroupStats& g : s0.kv.groups) block_bytes += g.bytes_per_block;
    res.kv_bytes_per_token = block_bytes / uint64_t(res.block_size);
    // What a tier row moves: one payload (RAM) or record (disk, Redis) per group and block.
    const int64_t count = res.prefix_blocks * int64_t(groups);
    const uint64_t payload = groups > 0 ? block_bytes / groups : 0;
    const uint64_t record = payload + kRecordHeaderBytes;
    const int64_t reusable = res.prefix_blocks * res.block_size;
    Bench b(*engine, options, log, reusable);
    b.Log(fmt::format("{}: {} prompt tokens, {} reusable blocks x {} group(s) of {} bytes; {}",
                      res.model, options.prompt_tokens, res.prefix_blocks, groups, payload,
                      engine->DescribeCapacity()));

    // (a): extra runs first on other prompts, the measured prompt last (so it is the pool's most
    // recently used and the last recompute).
    std::vector<std::vector<int32_t>> firsts;
    for (int i = 1; i < options.recompute_repeat; ++i) {
      firsts.push_back(RandomPrompt(options.prompt_tokens, vocab, options.seed + uint64_t(i)));
    }
    const std::vector<int32_t> prompt = RandomPrompt(options.prompt_tokens, vocab, options.seed);
    firsts.push_back(prompt);
    KV_RETURN_IF_ERROR(
        b.Row(&recompute, options.recompute_repeat, std::nullopt, std::nullopt, firsts));
    KV_RETURN_IF_ERROR(b.Row(&pool, options.repeat, std::nullopt, std::nullopt, {prompt}));
    pool.blocks = uint64_t(pool.cached_tokens / res.block_size) * groups;

    KV_RETURN_IF_ERROR(b.Row(&ram, options.repeat, OffloadTo::kRam, TierKind::kRam, {prompt}));
    b.Raw(&ram, MeasureMemcpyBandwidth(payload, count, options.raw_passes));

    if (redis.empty()) {
      red.skipped = true;
      red.note = "skipped: no Redis (give --kv-redis host:port or unix:PATH)";
      b.Log("(e) redis: " + red.note);
    } else {
      KV_RETURN_IF_ERROR(
          b.Row(&red, options.repeat, OffloadTo::kBelowDisk, TierKind::kRedis, {prompt}));
      b.Raw(&red, MeasureRedisGetBandwidth(redis, redis_prefix + "raw:", record, count,
                                           options.raw_passes, eo.tiers.redis_timeout_ms));
    }

    KV_RETURN_IF_ERROR(b.Row(&disk, options.repeat, OffloadTo::kDisk, TierKind::kDisk, {prompt}));
    b.Raw(&disk, MeasureFileReadBandwidth(eo.tiers.disk_path, record, count, options.raw_passes));
  }  // The engine stops: its I/O thread has finished every write.
  if (!redis.empty()) {
    Result<int64_t> n = DeleteRedisKeys(redis, redis_prefix, eo.tiers.redis_timeout_ms);
    if (log) {
      log(n.ok() ? fmt::format("deleted the {} Redis keys under {}", *n, redis_prefix)
                 : "could not delete the Redis keys: " + n.status().message());
    }
  }
  for (TierBenchRow& row : res.rows) {
    if (row.skipped || row.ttft_s <= 0) continue;
    if (recompute.ttft_s > 0) row.speedup_vs_recompute = recompute.ttft_s / row.ttft_s;
    if (row.bytes > 0 && row.ttft_s > pool.ttft_s && &row != &pool) {
      row.effective_gb_per_s = double(row.bytes) / (row.ttft_s - pool.ttft_s) / 1e9;
    }
  }
  res.targets = TierBenchTargets(res.rows);
  return res;
}

std::vector<TierBenchTarget> TierBenchTargets(const std::vector<TierBenchRow>& rows) {
  auto find = [&](TierScenario s) -> const TierBenchRow* {
    for (const TierBenchRow& r : rows) {
      if (r.scenario == s && !r.skipped && r.served && r.ttft_s > 0) return &r;
    }
    return nullptr;
  };
  const TierBenchRow* recompute = find(TierScenario::kRecompute);
  std::vector<TierBenchTarget> t;
  auto speedup = [&](TierScenario s, const char* name, double goal) {
    const TierBenchRow* r = find(s);
    TierBenchTarget x{name, 0, goal, r != nullptr && recompute != nullptr, false};
    if (x.judged) {
      x.value = r->speedup_vs_recompute;
      x.met = x.value >= goal;
    }
    t.push_back(x);
  };
  auto transfer = [&](TierScenario s, const char* name) {
    const TierBenchRow* r = find(s);
    TierBenchTarget x{name, 0, 0.8, r != nullptr && r->raw.gb_per_s > 0 && r->tier_gb_per_s > 0,
                      false};
    if (x.judged) {
      x.value = r->fraction_of_raw;
      x.met = x.value >= x.goal;
    }
    t.push_back(x);
  };
  speedup(TierScenario::kRam, "RAM TTFT >= 10x faster than recompute", 10);
  speedup(TierScenario::kDisk, "disk TTFT >= 5x faster than recompute", 5);
  transfer(TierScenario::kRam, "RAM transfer >= 0.8 of memcpy");
  transfer(TierScenario::kDisk, "disk transfer >= 0.8 of the O_DIRECT file read");
  transfer(TierScenario::kRedis, "Redis transfer >= 0.8 of pipelined GET");
  return t;
}

}  // namespace kvengine
