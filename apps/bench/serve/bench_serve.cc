#include "bench/serve/bench_serve.h"

#include <httplib.h>

#include <algorithm>

#include "bench/serve/metrics_sampler.h"

namespace kvengine::loadgen {
namespace {

constexpr int kDefaultSystemPrompt = 1024;

Result<std::vector<Conversation>> MakeConversations(BenchServeOptions& o, const ServerInfo& info) {
  WorkloadSpec spec;
  spec.kind = o.workload;
  spec.num_requests = o.num_prompts;
  spec.turns = o.turns;
  spec.max_model_len = info.max_model_len;
  if (o.system_prompt_tokens < 0) {
    o.system_prompt_tokens = int(std::min<int64_t>(kDefaultSystemPrompt, info.max_model_len / 2));
  }
  spec.system_prompt_tokens = o.system_prompt_tokens;
  spec.vocab_size = int32_t(std::min<int64_t>(o.vocab_size, INT32_MAX));
  spec.seed = o.seed;
  KV_ASSIGN_OR_RETURN(Workload w, GenerateWorkload(spec));
  return ToConversations(w, o.caps);
}

Result<ServerInfo> Describe(BenchServeOptions& o, const HttpTarget& target) {
  Result<ServerInfo> info = FetchServerInfo(target);
  if (!info.ok()) {
    return Unavailable("cannot reach a server at " + target.url + " (" + info.status().message() +
                       "); start one with `kvengine serve`, or leave --url out to run one "
                       "in-process");
  }
  if (info->max_model_len <= 0) {
    return Unavailable(target.url + "/v1/models does not say max_model_len");
  }
  if (o.vocab_size <= 0) o.vocab_size = info->vocab_size;
  if (o.vocab_size <= 0) {
    return InvalidArgument(target.url + "/v1/models does not say vocab_size: pass --vocab-size");
  }
  if (o.load.model.empty()) o.load.model = info->model;
  return info;
}

}  // namespace

Result<BenchServeResult> RunBenchServe(BenchServeOptions options, const ProgressFn& progress) {
  KV_ASSIGN_OR_RETURN(HttpTarget target, ParseBaseUrl(options.url));
  options.load.seed = options.seed;
  BenchServeResult r;
  KV_ASSIGN_OR_RETURN(r.server, Describe(options, target));
  KV_ASSIGN_OR_RETURN(std::vector<Conversation> conversations,
                      MakeConversations(options, r.server));
  r.conversations = int64_t(conversations.size());
  std::unique_ptr<httplib::Client> client = MakeClient(target, 10);
  Result<ServerSnapshot> before = FetchSnapshot(*client, target);
  if (before.ok()) {
    r.observations.before = *before;
  } else {
    r.observations.metrics_error = before.status().message();
  }
  const auto start = std::chrono::steady_clock::now();
  {
    MetricsSampler sampler(target, start, options.sample_interval);
    r.load = RunLoad(target, conversations, options.load, start, progress);
    r.observations.timeline = sampler.Stop();
  }
  if (before.ok()) {
    Result<ServerSnapshot> after = FetchSnapshot(*client, target);
    if (after.ok()) {
      r.observations.after = *after;
    } else {
      r.observations.metrics_error = after.status().message();
    }
  }
  r.summary = Summarize(r.load.records, r.load.duration_s, r.observations);
  r.options = std::move(options);
  return r;
}

}  // namespace kvengine::loadgen
