#include "server/metrics.h"

#include <string_view>

#include <fmt/format.h>


namespace kvengine::server {
namespace {

// Writes metric families; every sample gets the model_name label first.
class PromWriter {
 public:
  explicit PromWriter(const std::string& model_name)
      : model_label_("model_name=\"" + EscapeLabelValue(model_name) + "\"") {}

  void Header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP kvengine:{} {}\n# TYPE kvengine:{} {}\n", name, help, name, type);
  }
  // `labels`: extra labels, already formatted ("group=\"0\""), or empty.
  void Sample(std::string_view name, std::string_view labels, double value) {
    out_ += fmt::format("kvengine:{}{{{}{}{}}} {}\n", name, model_label_, labels.empty() ? "" : ",",
                        labels, Number(value));
  }
  void Sample(std::string_view name, std::string_view labels, int64_t value) {
    out_ += fmt::format("kvengine:{}{{{}{}{}}} {}\n", name, model_label_, labels.empty() ? "" : ",",
                        labels, value);
  }
  void Gauge(std::string_view name, std::string_view help, double value) {
    Header(name, "gauge", help);
    Sample(name, "", value);
  }
  void Gauge(std::string_view name, std::string_view help, int64_t value) {
    Header(name, "gauge", help);
    Sample(name, "", value);
  }
  void Counter(std::string_view name, std::string_view help, int64_t value) {
    Header(name, "counter", help);
    Sample(name, "", value);
  }
  void Histo(std::string_view name, std::string_view help, const Histogram& h) {
    Header(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.counts().size(); ++i) {
      cumulative += h.counts()[i];
      const std::string le = i < h.bounds().size() ? Number(h.bounds()[i]) : "+Inf";
      Sample(bucket, "le=\"" + le + "\"", cumulative);
    }
    Sample(std::string(name) + "_sum", "", h.sum());
    Sample(std::string(name) + "_count", "", h.count());
  }
  std::string Take() { return std::move(out_); }

 private:
  // Shortest text that reads back to the same double (Prometheus parses Go floats).
  static std::string Number(double v) { return fmt::format("{}", v); }

  std::string model_label_;
  std::string out_;
};

void WriteKv(const KvStats& kv, PromWriter& w) {
  struct BlockGauge {
    std::string_view name, help;
    int32_t KvGroupStats::*field;
  };
  static constexpr BlockGauge kBlocks[] = {
      {"kv_blocks_total", "KV blocks in the pool, per layer group.",
       &KvGroupStats::capacity_blocks},
      {"kv_blocks_free", "KV blocks holding nothing.", &KvGroupStats::free_blocks},
      {"kv_blocks_cached", "Unreferenced KV blocks kept for prefix reuse (evictable).",
       &KvGroupStats::cached_blocks},
      {"kv_blocks_used", "KV blocks referenced by sequences.", &KvGroupStats::used_blocks},
      {"kv_blocks_shared", "KV blocks referenced by two or more sequences.",
       &KvGroupStats::shared_blocks},
  };
  for (const BlockGauge& g : kBlocks) {
    w.Header(g.name, "gauge", g.help);
    for (size_t i = 0; i < kv.groups.size(); ++i) {
      w.Sample(g.name, fmt::format("group=\"{}\"", i), int64_t{kv.groups[i].*g.field});
    }
  }
  w.Header("kv_evictions_total", "counter", "Cached KV blocks reclaimed, per layer group.");
  for (size_t i = 0; i < kv.groups.size(); ++i) {
    w.Sample("kv_evictions_total", fmt::format("group=\"{}\"", i), kv.groups[i].evictions);
  }
  w.Gauge("kv_block_size_tokens", "Tokens per KV block.", int64_t{kv.block_size});
  w.Gauge("kv_cache_pool_bytes", "Bytes of the whole KV pool.", int64_t(kv.pool_bytes));
  w.Header("kv_cache_used_bytes", "gauge", "Bytes of used KV blocks by number format.");
  for (KvDtype d : kAllKvDtypes) {
    const uint64_t bytes = kv.used_bytes_by_dtype[size_t(d)];
    if (bytes == 0) continue;
    w.Sample("kv_cache_used_bytes", fmt::format("dtype=\"{}\"", KvDtypeName(d)), int64_t(bytes));
  }
  w.Sample("kv_cache_used_bytes", "dtype=\"padding\"", int64_t(kv.used_padding_bytes));
  w.Gauge("kv_tokens_stored", "Tokens held in used KV blocks.", kv.tokens_stored);
  w.Counter("kv_cow_copies_total", "Shared partial blocks copied on first write.", kv.cow_copies);
}

// Offload tiers: one sample per present tier, label tier="ram|disk|redis".
void WriteTiers(const EngineStats& s, PromWriter& w) {
  const TierStats& t = s.tiers;
  struct TierMetric {
    std::string_view name, type, help;
    double (*get)(const TierCounters&);
  };
  static constexpr TierMetric kMetrics[] = {
      {"kv_tier_blocks", "gauge", "KV blocks held by an offload tier.",
       [](const TierCounters& c) { return double(c.blocks); }},
      {"kv_tier_bytes", "gauge", "Bytes held by an offload tier.",
       [](const TierCounters& c) { return double(c.bytes); }},
      {"kv_tier_capacity_bytes", "gauge", "Capacity of an offload tier (0: not bounded here).",
       [](const TierCounters& c) { return double(c.capacity_bytes); }},
      {"kv_tier_hits_total", "counter", "Blocks an offload tier returned.",
       [](const TierCounters& c) { return double(c.hits); }},
      {"kv_tier_misses_total", "counter", "Blocks an offload tier did not have (or failed).",
       [](const TierCounters& c) { return double(c.misses); }},
      {"kv_tier_bytes_read_total", "counter", "Bytes read from an offload tier.",
       [](const TierCounters& c) { return double(c.bytes_read); }},
      {"kv_tier_bytes_written_total", "counter", "Bytes written to an offload tier.",
       [](const TierCounters& c) { return double(c.bytes_written); }},
      {"kv_tier_errors_total", "counter", "Failed offload-tier operations.",
       [](const TierCounters& c) { return double(c.errors); }},
      {"kv_tier_corrupt_total", "counter", "Stored blocks that failed verification (misses).",
       [](const TierCounters& c) { return double(c.corrupt); }},
      {"kv_tier_bandwidth_bytes_per_second", "gauge",
       "Measured read bandwidth of an offload tier (moving average; 0 until measured).",
       [](const TierCounters& c) { return c.bandwidth_bytes_per_s; }},
  };
  for (const TierMetric& m : kMetrics) {
    w.Header(m.name, m.type, m.help);
    for (int k = 0; k < kNumTierKinds; ++k) {
      if (!t.tiers[k].present) continue;
      w.Sample(m.name, fmt::format("tier=\"{}\"", TierKindName(TierKind(k))),
               m.get(t.tiers[k]));
    }
  }
  w.Header("prefix_cache_hit_blocks_by_source_total", "counter",
           "Blocks offload tiers put back into the pool for prefix hits, by the tier they came "
           "from (pool hits are prefix_cache_hits_total minus these).");
  for (int k = 0; k < kNumTierKinds; ++k) {
    w.Sample("prefix_cache_hit_blocks_by_source_total",
             fmt::format("source=\"{}\"", TierKindName(TierKind(k))),
             int64_t(t.prefix_hit_blocks[k]));
  }
  w.Counter("prefix_cache_tier_hit_tokens_total", "Prompt tokens served by blocks from a tier.",
            s.kv.prefix_tier_hit_tokens);
  w.Counter("kv_tier_demotions_total", "Blocks the pool evicted into the tiers.",
            int64_t(t.demotions));
  w.Counter("kv_tier_writes_dropped_total", "Tier writes dropped by a full queue.",
            int64_t(t.writes_dropped));
  w.Counter("kv_tier_prefetches_total", "Prefetches issued for waiting requests.",
            int64_t(t.prefetches_issued));
  w.Counter("kv_tier_prefetches_useless_total", "Prefetches that found nothing.",
            int64_t(t.prefetches_useless));
  w.Counter("kv_tier_prefetches_late_total",
            "Prefetches slower than recomputing their blocks would have been.",
            int64_t(t.prefetches_late));
  w.Counter("kv_tier_prefetched_blocks_total", "Blocks prefetches brought into RAM.",
            int64_t(t.prefetched_blocks));
  w.Counter("kv_tier_swap_ins_total", "Preempted sequences resumed with KV from a tier.",
            s.tier_swap_ins_total);
  w.Counter("kv_tier_redis_reconnects_total", "Reconnections to Redis.",
            int64_t(t.redis_reconnects));
  w.Gauge("kv_tier_redis_breaker_open", "1 while the Redis circuit breaker is open.",
          int64_t(t.redis_breaker_open ? 1 : 0));
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMetrics(const EngineStats* stats, const std::string& model_name,
                          const std::map<int, int64_t>& http_responses) {
  PromWriter w(model_name);
  if (stats != nullptr) {
    const EngineStats& s = *stats;
    w.Gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_usage);
    w.Counter("prefix_cache_queries_total", "Prefix cache queries, in prompt tokens queried.",
              s.prefix_cache_queries_tokens);
    w.Counter("prefix_cache_hits_total", "Prefix cache hits, in prompt tokens served from cache.",
              s.prefix_cache_hits_tokens);
    w.Gauge("num_requests_running", "Requests in model execution batches.", s.requests_running);
    w.Gauge("num_requests_waiting", "Requests waiting to be processed.", s.requests_waiting);
    w.Counter("num_preemptions_total", "Cumulative number of preemptions.", s.preemptions_total);
    w.Counter("prompt_tokens_total", "Prefill tokens processed (cached ones included).",
              s.prompt_tokens_total);
    w.Counter("prompt_tokens_computed_total", "Prefill tokens run through the model.",
              s.prompt_tokens_computed_total);
    w.Counter("generation_tokens_total", "Generation tokens processed.", s.generation_tokens_total);
    w.Counter("request_success_total", "Requests finished.", s.requests_finished_total);
    w.Counter("request_cancelled_total",
              "Requests cancelled (client gone, stop string, "
              "shutdown).",
              s.requests_cancelled_total);
    w.Counter("request_rejected_total", "Requests refused at admission.",
              s.requests_rejected_total);
    w.Counter("recomputed_tokens_total", "Positions run again after a preemption.",
              s.recomputed_tokens_total);
    w.Counter("engine_steps_total", "Batched forward passes.", s.steps_total);
    if (s.has_tiers) WriteTiers(s, w);
    w.Histo("time_to_first_token_seconds", "Time to first token in seconds.", s.ttft);
    w.Histo("inter_token_latency_seconds", "Time between output tokens in seconds.", s.itl);
    w.Histo("e2e_request_latency_seconds", "End-to-end request latency in seconds.", s.e2e);
    WriteKv(s.kv, w);
  }
  w.Header("http_responses_total", "counter", "HTTP responses by status code.");
  for (const auto& [code, count] : http_responses) {
    w.Sample("http_responses_total", fmt::format("code=\"{}\"", code), count);
  }
  return w.Take();
}

}  // namespace kvengine::server
