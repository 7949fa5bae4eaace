// `kvengine run`: generate text from a prompt, streaming it, then one line of figures.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>

#include "base/check.h"
#include "base/size_parse.h"
#include "cli_flags.h"
#include "commands.h"
#include "kernels/kernel_target.h"
#include "model/model.h"
#include "model_files.h"
#include "planner/kv_plan.h"
#include "runtime/generator.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::cli {
namespace {

struct RunFlags {
  CommonFlags common;
  std::string prompt;
  std::string prompt_ids;
  int64_t n_predict = 64;
  SamplingParams sampling;
  int threads = 0;
  int top_logits = 0;
  std::string isa;
};

Result<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > INT32_MAX) {
      return InvalidArgument("--prompt-ids: '" + item + "' is not a token id");
    }
    ids.push_back(int32_t(v));
  }
  return ids;
}

// What a finished run reports, in either output format.
struct RunReport {
  const std::string& model_path;
  const std::vector<int32_t>& prompt;
  const GenerateResult& result;
  const std::string& text;  // The whole generated text.
  const KvDtypeMap& dtypes;
  const KvPlan& plan;
  const KvCacheManager& kv;
  const std::vector<int32_t>& max_used_blocks;  // [group] most blocks held during the run.
  int threads = 0;
  int top_logits = 0;
  double prefill_tps = 0;
  double decode_tps = 0;
};

// --json: one object on stdout.
void PrintRunJson(const RunReport& rr) {
  const GenerateResult* r = &rr.result;
  nlohmann::ordered_json j;
  j["model"] = rr.model_path;
  j["prompt_token_ids"] = rr.prompt;
  j["output_token_ids"] = r->output_ids;
  j["text"] = rr.text;
  j["prefill_tokens_per_s"] = rr.prefill_tps;
  j["decode_tokens_per_s"] = rr.decode_tps;
  j["kv_dtype"] = rr.dtypes.Describe();
  j["kv_bytes_per_token"] = rr.plan.kv_bytes_per_token;
  j["kv_bytes_in_use"] = r->kv_bytes_in_use;
  j["threads"] = rr.threads;
  j["kernel_target"] = ActiveKernelTarget();
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (int g = 0; g < rr.kv.num_groups(); ++g) {
    const KvGroupSpec& spec = rr.kv.group(g).spec();
    const GroupPlan& gp = rr.plan.groups[size_t(g)];
    nlohmann::ordered_json o;
    o["kind"] = KvGroupKindName(spec.kind);
    o["layers"] = spec.layers.size();
    o["window"] = spec.window;
    o["bytes_per_block"] = gp.bytes_per_block;
    o["planned_blocks_per_sequence"] = gp.blocks_per_sequence;
    o["max_used_blocks"] = rr.max_used_blocks[size_t(g)];
    o["max_used_bytes"] = uint64_t(rr.max_used_blocks[size_t(g)]) * gp.bytes_per_block;
    groups.push_back(o);
  }
  j["kv_groups"] = groups;
  if (rr.top_logits > 0) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : r->prompt_top_logits) {
      nlohmann::json entries = nlohmann::json::array();
      for (const auto& [id, logit] : row) entries.push_back({id, logit});
      rows.push_back(entries);
    }
    j["prompt_top_logits"] = rows;
  }
  std::printf("%s\n", j.dump().c_str());
}

// Text: the end of the streamed text, then one line of figures (and one of KV groups for hybrid
// and windowed models).
void PrintRunText(const RunReport& rr, const std::string& tail) {
  const GenerateResult* r = &rr.result;
  std::printf("%s\n", tail.c_str());
  std::printf("[prompt %zu tokens, generated %zu | prefill %.1f tok/s, decode %.1f tok/s | KV %s, "
              "%llu bytes/token, %s in use | %d threads, %s]\n",
              rr.prompt.size(), r->output_ids.size(), rr.prefill_tps, rr.decode_tps,
              rr.dtypes.Describe().c_str(),
              static_cast<unsigned long long>(rr.plan.kv_bytes_per_token),
              FormatBytes(r->kv_bytes_in_use).c_str(), rr.threads, ActiveKernelTarget().c_str());
  if (rr.kv.num_groups() > 1 || rr.kv.group(0).spec().windowed()) {
    // Hybrid and windowed models: each group's peak, so a bounded window is visible.
    std::string line;
    for (int g = 0; g < rr.kv.num_groups(); ++g) {
      const KvGroupSpec& spec = rr.kv.group(g).spec();
      const uint64_t bpb = rr.plan.groups[size_t(g)].bytes_per_block;
      line += (g ? " | " : "") + spec.Describe() + ": at most " +
              std::to_string(rr.max_used_blocks[size_t(g)]) + " blocks (" +
              FormatBytes(uint64_t(rr.max_used_blocks[size_t(g)]) * bpb) + ")";
    }
    std::printf("[KV groups: %s]\n", line.c_str());
  }
}

int RunRun(RunFlags& f) {
  if (!f.isa.empty()) {
    Status s = ForceKernelTarget(f.isa);
    if (!s.ok()) return Fail(s);
  }
  Result<ModelFile> mf = OpenModelFile(f.common.model, LoadModeOf(f.common));
  if (!mf.ok()) return Fail(mf.status());
  Result<std::unique_ptr<Model>> model = LoadModel(mf->file, mf->path);
  if (!model.ok()) return Fail(model.status());
  const ModelConfig& cfg = (*model)->config();
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*mf->file);
  if (!tok.ok()) return Fail(tok.status());
  Result<KvDtypeMap> dtypes = ResolveKvDtypes(f.common, cfg.n_layers);
  if (!dtypes.ok()) return Fail(dtypes.status());
  Result<int64_t> ctx = ResolveCtx(f.common, cfg);
  if (!ctx.ok()) return Fail(ctx.status());
  std::vector<int32_t> prompt;
  if (!f.prompt_ids.empty()) {
    Result<std::vector<int32_t>> ids = ParseIds(f.prompt_ids);
    if (!ids.ok()) return FailUsage(ids.status());
    prompt = *ids;
  } else {
    prompt = (*tok)->Encode(f.prompt, /*add_special=*/true);
  }
  // The pool holds one sequence of ctx tokens, plus one prefill chunk for windowed groups.
  PlanOptions po;
  po.ctx = *ctx;
  po.block_size = f.common.block_size;
  Result<KvPlan> plan = PlanKv(cfg, *dtypes, po);
  if (!plan.ok()) return Fail(plan.status());
  GenerateOptions go;
  go.max_new_tokens = f.n_predict;
  go.sampling = f.sampling;
  go.eos_token = (*tok)->eos();
  go.top_logits = f.top_logits;
  KvCacheConfig kc;
  kc.groups = *BuildKvGroups(cfg, *dtypes);
  kc.block_size = f.common.block_size;
  kc.max_model_len = *ctx;
  uint64_t all_groups_block = 0;
  for (const GroupPlan& g : plan->groups) all_groups_block += g.bytes_per_block;
  kc.memory_bytes = plan->kv_bytes_per_sequence +
                    uint64_t(go.prefill_chunk / f.common.block_size + 1) * all_groups_block;
  kc.model_fingerprint = mf->path;
  Result<std::unique_ptr<KvCacheManager>> kv = KvCacheManager::Create(kc);
  if (!kv.ok()) return Fail(kv.status());
  KV_CHECK(plan->groups.size() == size_t((*kv)->num_groups()));  // Both from BuildKvGroups.
  const int threads = f.threads > 0 ? f.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  if (mf->synthetic && !f.common.json) {
    std::fprintf(stderr, "(synthetic model %s: random weights, the text is meaningless)\n",
                 mf->path.c_str());
  }
  StreamDecoder stream(**tok);
  std::string text;
  // [group] most blocks each KV group held, sampled after every generated token: what shows that
  // a windowed group's KV stays bounded while a full group's grows with the sequence.
  std::vector<int32_t> max_used_blocks(size_t((*kv)->num_groups()), 0);
  auto on_token = [&](int32_t id) {
    const KvStats stats = (*kv)->Stats();
    for (size_t g = 0; g < max_used_blocks.size(); ++g) {
      max_used_blocks[g] = std::max(max_used_blocks[g], stats.groups[g].used_blocks);
    }
    const std::string piece = stream.Push(id);
    text += piece;
    if (!f.common.json) {
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  if (!f.common.json && f.prompt_ids.empty()) std::fputs(f.prompt.c_str(), stdout);
  Result<GenerateResult> r = Generate(**model, **kv, pool, 1, prompt, go, on_token);
  if (!r.ok()) return Fail(r.status());
  const std::string tail = stream.Finish();
  text += tail;
  const double prefill_tps = r->prefill_seconds > 0 ? r->prefill_tokens / r->prefill_seconds : 0;
  const double decode_n = double(r->output_ids.size() > 0 ? r->output_ids.size() - 1 : 0);
  const double decode_tps = r->decode_seconds > 0 ? decode_n / r->decode_seconds : 0;
  const RunReport report{mf->path, prompt, *r, text, *dtypes, *plan, **kv, max_used_blocks,
                         threads, f.top_logits, prefill_tps, decode_tps};
  if (f.common.json) {
    PrintRunJson(report);
  } else {
    PrintRunText(report, tail);
  }
  return 0;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RunFlags>();
  f->common.model = "small";
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt over the paged KV cache");
  cmd->add_option("-m,--model", f->common.model,
                  "GGUF file, or a synthetic preset generated once into the cache (tiny, small, "
                  "llama-1b, mistral-tiny, mistral-small, llama3-tiny, qwen2-tiny, gemma2-tiny, "
                  "gemma3-tiny; random weights)")
      ->capture_default_str();
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (BOS added as the model's metadata says)");
  cmd->add_option("--prompt-ids", f->prompt_ids, "Prompt as comma-separated token ids (1,403,...)");
  cmd->add_option("-n,--n-predict", f->n_predict, "Tokens to generate")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--temp", f->sampling.temperature, "Temperature; 0 = greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", f->sampling.top_k, "Top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", f->sampling.top_p, "Top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", f->sampling.min_p, "Min-p (0 = off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", f->sampling.repetition_penalty,
                  "Repetition penalty over the last 64 tokens (1 = off)")
      ->capture_default_str();
  cmd->add_option("--seed", f->sampling.seed, "Sampling seed (same seed, same text)")
      ->capture_default_str();
  AddCtxFlag(cmd, &f->common);
  AddKvFlags(cmd, &f->common);
  cmd->add_option("-t,--threads", f->threads, "Worker threads, 1-1024 (default, 0: all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--top-logits", f->top_logits,
                  "With --json: add prompt_top_logits, the top-K [id, logit] after every prompt "
                  "position (teacher forcing)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--isa", f->isa,
                  "Force a kernel instruction set (AVX3, AVX2, SSE4, SCALAR, ref) for testing; "
                  "default: the best this CPU runs (env KVENGINE_ISA too)")
      ->envname("KVENGINE_ISA");
  AddMmapFlag(cmd, &f->common);
  AddJsonFlag(cmd, &f->common);
  cmd->callback([f, exit_code] {
    if (f->prompt.empty() && f->prompt_ids.empty()) {
      *exit_code = FailUsage(InvalidArgument("give a prompt with -p TEXT or --prompt-ids IDS"));
      return;
    }
    Status v = f->sampling.Validate();
    if (!v.ok()) {
      *exit_code = FailUsage(v);
      return;
    }
    *exit_code = RunRun(*f);
  });
}

}  // namespace kvengine::cli
