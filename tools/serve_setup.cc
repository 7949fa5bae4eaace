#include "serve_setup.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "base/size_parse.h"
#include "input_files.h"
#include "model_files.h"
#include "planner/kv_plan.h"
#include "tier/redis_tier.h"

namespace kvengine::cli {
namespace {

constexpr uint64_t kDefaultKvCap = uint64_t{1} << 30;  // 1 GiB.

// --kv-cache-memory-bytes, or by default what max_num_seqs sequences of max_model_len tokens
// need, capped at 1 GiB but never below one full sequence.
Result<uint64_t> KvMemory(const ServeFlags& f, const ModelConfig& cfg, const KvDtypeMap& dtypes,
                          int64_t ctx) {
  if (!f.kv_memory.empty()) {
    Result<uint64_t> m = ParseSize(f.kv_memory);
    if (!m.ok()) return InvalidArgument("--kv-cache-memory-bytes: " + m.status().message());
    return *m;
  }
  PlanOptions po;
  po.ctx = ctx;
  po.batch = f.max_num_seqs;
  po.block_size = f.common.block_size;
  KV_ASSIGN_OR_RETURN(KvPlan plan, PlanKv(cfg, dtypes, po));
  return std::max(plan.kv_bytes_per_sequence, std::min(kDefaultKvCap, plan.kv_bytes_total));
}

std::vector<std::string> StepPolicyNames() {
  std::vector<std::string> names;
  for (StepPolicy p : kStepPolicies) names.emplace_back(StepPolicyName(p));
  return names;
}

// The scheduler's options from serve's flags (--step-policy and --kv-policy checked their names).
SchedulerOptions SchedulerOptionsOf(const ServeFlags& f) {
  SchedulerOptions s;
  s.max_num_seqs = f.max_num_seqs;
  s.max_num_batched_tokens = f.max_num_batched_tokens;
  s.contiguous_reservation = f.kv_policy == "contiguous";
  for (StepPolicy p : kStepPolicies) {
    if (f.step_policy == StepPolicyName(p)) s.step_policy = p;
  }
  return s;
}

}  // namespace

std::vector<CLI::Option*> AddServeModelFlags(CLI::App* cmd, ServeFlags* f) {
  std::vector<CLI::Option*> added;
  added.push_back(
      cmd->add_option("-m,--model", f->common.model,
                      "GGUF file, or a synthetic preset generated once into the cache (tiny, "
                      "small, llama-1b, mistral-tiny, mistral-small; random weights)")
          ->capture_default_str());
  added.push_back(
      cmd->add_option("--served-model-name", f->served_model_name,
                      "The model id in /v1/models and responses (default: the -m value)"));
  const size_t before = cmd->get_options().size();
  AddCtxFlag(cmd, &f->common);
  AddKvFlags(cmd, &f->common);
  AddMmapFlag(cmd, &f->common);
  const std::vector<CLI::Option*> all = cmd->get_options();
  added.insert(added.end(), all.begin() + std::ptrdiff_t(before), all.end());
  return added;
}

std::vector<CLI::Option*> AddServeEngineFlags(CLI::App* cmd, ServeFlags* f) {
  std::vector<CLI::Option*> a;
  a.push_back(cmd->add_option("-t,--threads", f->threads, "Compute threads (default: all cores)")
                  ->check(CLI::Range(0, 1024)));
  a.push_back(cmd->add_option("--max-num-seqs", f->max_num_seqs, "Sequences decoding at once")
                  ->check(CLI::Range(1, 4096))
                  ->capture_default_str());
  a.push_back(
      cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens,
                      "Tokens per forward pass (decodes plus prefill chunks); >= --max-num-seqs")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
          ->capture_default_str());
  a.push_back(cmd->add_option("--max-queued-requests", f->max_queued_requests,
                              "Waiting requests beyond this are answered 503 with Retry-After")
                  ->check(CLI::Range(0, 1 << 20))
                  ->capture_default_str());
  a.push_back(cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching",
                            f->prefix_caching,
                            "Reuse the KV of prompt prefixes seen before (on by default)"));
  a.push_back(
      cmd->add_option("--kv-cache-memory-bytes", f->kv_memory,
                      "KV pool size (512MiB, 4GiB); default: what --max-num-seqs sequences of the "
                      "full context need, at most 1GiB but at least one full sequence")
          ->check(SizeCheck()));
  a.push_back(cmd->add_option("--kv-policy", f->kv_policy,
                              "paged: blocks as tokens arrive; contiguous: reserve max_model_len "
                              "tokens per sequence at admission (emulates pre-PagedAttention "
                              "servers, for comparison)")
                  ->check(CLI::IsMember({"paged", "contiguous"}))
                  ->capture_default_str());
  a.push_back(cmd->add_option("--step-policy", f->step_policy,
                              "mixed: every step runs the decodes beside prompt chunks (vLLM's "
                              "chunked prefill); prefill-first: prompt work alone when there is "
                              "any, decodes in the steps between (SGLang's default: lower TTFT, "
                              "decodes wait a step per prefill)")
                  ->check(CLI::IsMember(StepPolicyNames()))
                  ->capture_default_str());
  a.push_back(cmd->add_option("--swap-space", f->swap_space,
                              "Host RAM tier for KV blocks evicted from the pool (e.g. 4GiB); 0: "
                              "none (evicted blocks are dropped, or go to disk/Redis if set)")
                  ->check(SizeCheck())
                  ->capture_default_str());
  a.push_back(cmd->add_option("--kv-disk-path", f->kv_disk_path,
                              "Directory of the disk tier (persists across restarts); empty: none"));
  a.push_back(cmd->add_option("--kv-disk-size", f->kv_disk_size, "Capacity of the disk tier")
                  ->check(SizeCheck())
                  ->capture_default_str());
  a.push_back(cmd->add_option("--kv-redis", f->kv_redis,
                              "Redis tier shared between instances: host:port or unix:PATH"));
  a.push_back(cmd->add_option("--kv-redis-write", f->kv_redis_write,
                              "all: publish every completed block; evicted: only blocks the pool "
                              "evicts")
                  ->check(CLI::IsMember({"all", "evicted"}))
                  ->capture_default_str());
  a.push_back(cmd->add_option("--kv-tier-dtype", f->kv_tier_dtype,
                              "Store blocks on disk and in Redis re-encoded in this KV dtype "
                              "(e.g. int8 under an f16 pool: about half the bytes); default: the "
                              "pool's own bytes")
                  ->check(KvDtypeCheck()));
  return a;
}

Result<TierConfig> ResolveTiers(const ServeFlags& f) {
  TierConfig t;
  Result<uint64_t> ram = ParseSize(f.swap_space);
  if (!ram.ok()) return InvalidArgument("--swap-space: " + ram.status().message());
  t.ram_bytes = *ram;
  t.disk_path = f.kv_disk_path;
  Result<uint64_t> disk = ParseSize(f.kv_disk_size);
  if (!disk.ok()) return InvalidArgument("--kv-disk-size: " + disk.status().message());
  t.disk_bytes = *disk;
  t.redis = f.kv_redis;
  KV_ASSIGN_OR_RETURN(t.redis_write, ParseRedisWritePolicy(f.kv_redis_write));
  if (!f.kv_tier_dtype.empty()) {
    Result<KvDtype> d = ParseKvDtype(f.kv_tier_dtype);
    if (!d.ok()) return InvalidArgument("--kv-tier-dtype: " + d.status().message());
    t.cold_dtype = *d;
  }
  return t;
}

Result<Loaded> LoadAndStart(const ServeFlags& f, std::string_view who) {
  Loaded l;
  KV_ASSIGN_OR_RETURN(ModelFile mf, OpenModelFile(f.common.model, LoadModeOf(f.common)));
  l.file = mf.file;
  KV_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, LoadModel(mf.file, mf.path));
  l.model = std::shared_ptr<const Model>(std::move(model));
  const ModelConfig& cfg = l.model->config();
  KV_ASSIGN_OR_RETURN(l.tokenizer, Tokenizer::FromGguf(*mf.file));
  KV_ASSIGN_OR_RETURN(KvDtypeMap dtypes, ResolveKvDtypes(f.common, cfg.n_layers));
  KV_ASSIGN_OR_RETURN(l.max_model_len, ResolveCtx(f.common, cfg));
  EngineOptions eo;
  eo.sched = SchedulerOptionsOf(f);
  eo.max_queued_requests = f.max_queued_requests;
  eo.threads = f.threads;
  KV_ASSIGN_OR_RETURN(eo.kv.groups, BuildKvGroups(cfg, dtypes));
  eo.kv.block_size = f.common.block_size;
  eo.kv.max_model_len = l.max_model_len;
  eo.kv.enable_prefix_caching = f.prefix_caching;
  eo.kv.model_fingerprint = mf.path;
  KV_ASSIGN_OR_RETURN(eo.kv.memory_bytes, KvMemory(f, cfg, dtypes, l.max_model_len));
  KV_ASSIGN_OR_RETURN(eo.tiers, ResolveTiers(f));
  const Vocab& vocab = l.tokenizer->vocab();
  for (int32_t id : {vocab.special.eos, vocab.special.eot, vocab.special.eom}) {
    if (id != kNoToken) eo.eos_token_ids.push_back(id);
  }
  KV_ASSIGN_OR_RETURN(l.engine, Engine::Create(l.model, eo));
  l.engine->Start();
  // The GGUF's chat template, when it has one as a string (kPlain otherwise).
  Result<std::string_view> chat_template = mf.file->GetString("tokenizer.chat_template");
  l.chat_template = server::ChatTemplate::Detect(chat_template.ok() ? *chat_template : "");
  l.name = f.served_model_name.empty() ? f.common.model : f.served_model_name;
  const std::string w(who);
  if (mf.synthetic) {
    std::fprintf(stderr, "%s: synthetic model %s: random weights, the text is meaningless\n",
                 w.c_str(), mf.path.c_str());
  }
  std::fprintf(stderr, "%s: %s\n", w.c_str(), l.engine->DescribeCapacity().c_str());
  std::fprintf(stderr, "%s: KV %s, prefix caching %s, policy %s, chat template %s\n", w.c_str(),
               dtypes.Describe().c_str(), f.prefix_caching ? "on" : "off", f.kv_policy.c_str(),
               std::string(l.chat_template.name()).c_str());
  if (eo.tiers.enabled()) {
    std::fprintf(stderr, "%s: KV tiers: RAM %s, disk %s, Redis %s (write %s)\n", w.c_str(),
                 eo.tiers.ram_bytes ? FormatBytes(eo.tiers.ram_bytes).c_str() : "off",
                 eo.tiers.disk_path.empty()
                     ? "off"
                     : (eo.tiers.disk_path + " " + FormatBytes(eo.tiers.disk_bytes)).c_str(),
                 eo.tiers.redis.empty() ? "off" : eo.tiers.redis.c_str(),
                 (f.kv_redis_write + (eo.tiers.cold_dtype
                                          ? ", stored as " + std::string(KvDtypeName(*eo.tiers.cold_dtype))
                                          : std::string())).c_str());
  }
  return l;
}

Status ResolveHttpOptions(ServeFlags* f) {
  Result<uint64_t> body = ParseSize(f->max_body);
  if (!body.ok()) return InvalidArgument("--max-body-bytes: " + body.status().message());
  f->http.max_body_bytes = *body;
  f->http.max_threads =
      f->http_threads > 0 ? f->http_threads : f->max_num_seqs + f->max_queued_requests + 64;
  f->http.limits.max_n = std::min(kMaxChoices, f->max_num_seqs);
  return Status::Ok();
}

Status CheckServeFlags(ServeFlags* f) {
  KV_RETURN_IF_ERROR(ResolveHttpOptions(f));
  KV_RETURN_IF_ERROR(ResolveTiers(*f).status());
  // --kv-cache-memory-bytes and --kv-dtype were checked by the flag parser (SizeCheck,
  // KvDtypeCheck).
  KV_RETURN_IF_ERROR(SchedulerOptionsOf(*f).Validate());
  if (!f->kv_redis.empty()) {
    Result<RedisEndpoint> redis = ParseRedisEndpoint(f->kv_redis);
    if (!redis.ok()) return InvalidArgument("--kv-redis: " + redis.status().message());
  }
  std::error_code ec;
  if (!f->kv_disk_path.empty() && std::filesystem::exists(f->kv_disk_path, ec) &&
      !std::filesystem::is_directory(f->kv_disk_path, ec)) {
    return InvalidArgument("--kv-disk-path: " + f->kv_disk_path + " is not a directory");
  }
  // The files: -m must be a regular file or a preset, the KV dtype map a small regular file
  // (read again, and parsed against the model's layers, when the model is loaded).
  KV_RETURN_IF_ERROR(ResolveModelSource(f->common.model).status());
  if (!f->common.kv_dtype_map_file.empty()) {
    KV_RETURN_IF_ERROR(
        ReadSmallFile(f->common.kv_dtype_map_file, kMaxConfigFileBytes, "--kv-dtype-map")
            .status());
  }
  return Status::Ok();
}

server::ServedModel MakeServedModel(const Loaded& loaded, server::InferenceBackend* backend) {
  server::ServedModel served;
  served.name = loaded.name;
  served.backend = backend;
  served.tokenizer = loaded.tokenizer.get();
  served.chat_template = loaded.chat_template;
  served.max_model_len = loaded.max_model_len;
  return served;
}

}  // namespace kvengine::cli
