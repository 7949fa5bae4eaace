#include "bench/kv/kv_bench.h"

#include <utility>

#include "base/clock.h"
#include "model/kv_groups.h"
#include "model/presets.h"
#include "bench/kv/contiguous_allocator.h"
#include "bench/kv/kv_simulator.h"

namespace kvengine {

namespace {

Status ValidateOptions(const KvBenchOptions& o) {
  if (o.workloads.empty()) return InvalidArgument("no workload to run");
  if (o.policies.empty()) return InvalidArgument("no KV policy to run");
  if (o.block_size < 1 || o.block_size > 256) {
    return InvalidArgument("block size must be 1..256 tokens, got " + std::to_string(o.block_size));
  }
  if (o.kv_memory_bytes == 0) return InvalidArgument("KV memory budget must be > 0");
  if (o.max_model_len < 2 || o.max_model_len > (int64_t{1} << 24)) {
    return InvalidArgument("max_model_len must be 2..16M tokens");
  }
  return Status::Ok();
}

WorkloadSpec SpecFor(const KvBenchOptions& o, KvWorkload kind) {
  WorkloadSpec s;
  s.kind = kind;
  s.num_requests = o.num_requests;
  s.turns = o.turns;
  s.max_model_len = o.max_model_len;
  s.system_prompt_tokens = o.system_prompt_tokens;
  s.seed = o.seed;
  return s;
}

KvBenchRow RowOf(KvWorkload w, KvPolicy p, const SimResult& r, int64_t slots, double seconds) {
  KvBenchRow row;
  row.workload = std::string(KvWorkloadName(w));
  row.policy = std::string(KvPolicyName(p));
  row.requests = r.requests;
  row.requests_completed = r.requests_completed;
  row.steps = r.steps;
  row.preemptions = r.preemptions;
  row.peak_concurrent_sequences = r.peak_running;
  row.mean_concurrent_sequences = r.mean_running;
  row.utilization = r.utilization;
  row.prompt_tokens = r.prompt_tokens;
  row.cached_prompt_tokens = r.cached_prompt_tokens;
  row.recompute_tokens = r.recompute_tokens;
  row.cached_recompute_tokens = r.cached_recompute_tokens;
  row.prefix_hit_rate =
      r.prompt_tokens > 0 ? static_cast<double>(r.cached_prompt_tokens) / r.prompt_tokens : 0;
  row.kv_token_slots = slots;
  row.seconds = seconds;
  return row;
}

}  // namespace

std::string KvBenchDtypeName(const KvBenchOptions& options) {
  return options.kv_dtypes ? options.kv_dtypes->Describe()
                           : std::string(KvDtypeName(options.kv_dtype));
}

Result<std::vector<KvBenchRow>> RunKvBench(const KvBenchOptions& options,
                                           const KvBenchProgressFn& progress) {
  KV_RETURN_IF_ERROR(ValidateOptions(options));
  ModelConfig model;
  if (options.model_config) {
    model = *options.model_config;
    KV_RETURN_IF_ERROR(model.Validate());
  } else {
    KV_ASSIGN_OR_RETURN(model, FindPreset(options.model));
  }
  KV_ASSIGN_OR_RETURN(std::vector<KvGroupSpec> groups,
                      BuildKvGroups(model, options.kv_dtypes ? *options.kv_dtypes
                                                             : UniformDtypes(options.kv_dtype)));
  KvBackendConfig backend_config;
  backend_config.groups = std::move(groups);
  backend_config.block_size = options.block_size;
  backend_config.memory_bytes = options.kv_memory_bytes;
  backend_config.max_model_len = options.max_model_len;
  backend_config.model_fingerprint = model.name;
  backend_config.admission_watermark = options.watermark;
  // Contiguous's capacity in sequences: the ratio's denominator when contiguous is not run.
  const int32_t contiguous_capacity = ContiguousAllocator::RegionsFor(
      backend_config.groups, options.block_size, options.kv_memory_bytes, options.max_model_len);

  // Generate every workload first: errors come before any run, and the progress total is exact.
  std::vector<Workload> workloads;
  int64_t total = 0;
  for (KvWorkload w : options.workloads) {
    KV_ASSIGN_OR_RETURN(Workload generated, GenerateWorkload(SpecFor(options, w)));
    total += static_cast<int64_t>(generated.requests.size()) *
             static_cast<int64_t>(options.policies.size());
    workloads.push_back(std::move(generated));
  }

  SimOptions sim_options;
  sim_options.session_fcfs = options.session_fcfs;
  const Clock& clock = SteadyClock::Get();
  std::vector<KvBenchRow> rows;
  int64_t done_before = 0;
  for (const Workload& workload : workloads) {
    const size_t first_row = rows.size();
    int64_t contiguous_peak = contiguous_capacity;
    for (KvPolicy policy : options.policies) {
      KV_ASSIGN_OR_RETURN(std::unique_ptr<KvBackend> backend,
                          MakeKvBackend(policy, backend_config));
      SimProgressFn sim_progress;
      if (progress) {
        sim_progress = [&](int64_t done, int64_t) { progress(done_before + done, total); };
      }
      const int64_t t0 = clock.NowNanos();
      KV_ASSIGN_OR_RETURN(SimResult r,
                          SimulateKv(workload, backend.get(), sim_options, sim_progress));
      const double seconds = static_cast<double>(clock.NowNanos() - t0) * 1e-9;
      if (!r.idle_at_end) return Internal("KV blocks leaked in the workload simulation");
      done_before += r.requests;
      if (policy == KvPolicy::kContiguous) contiguous_peak = r.peak_running;
      rows.push_back(RowOf(workload.kind, policy, r, backend->capacity_tokens(), seconds));
    }
    for (size_t i = first_row; i < rows.size(); ++i) {
      rows[i].capacity_ratio =
          contiguous_peak > 0
              ? static_cast<double>(rows[i].peak_concurrent_sequences) / contiguous_peak
              : 0;
    }
  }
  return rows;
}

}  // namespace kvengine
