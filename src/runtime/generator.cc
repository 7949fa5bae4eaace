#include "runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"

namespace kvengine {
namespace {

// Releases the sequence on every exit path.
struct SeqGuard {
  KvCacheManager& kv;
  SeqId seq;
  ~SeqGuard() { kv.Release(seq); }
};

}  // namespace

std::vector<std::pair<int32_t, float>> TopK(std::span<const float> logits, int k) {
  std::vector<std::pair<int32_t, float>> all;
  all.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) all.emplace_back(int32_t(i), logits[i]);
  const size_t kk = std::min(all.size(), size_t(std::max(k, 0)));
  std::partial_sort(all.begin(), all.begin() + long(kk), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  all.resize(kk);
  return all;
}

Result<GenerateResult> Generate(const Model& model, KvCacheManager& kv, ThreadPool& pool,
                                SeqId seq, std::span<const int32_t> prompt,
                                const GenerateOptions& o, const TokenCallback& on_token) {
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  const int64_t ctx = kv.config().max_model_len;
  if (int64_t(prompt.size()) + o.max_new_tokens > ctx) {
    return OutOfRange("prompt (" + std::to_string(prompt.size()) + " tokens) + " +
                      std::to_string(o.max_new_tokens) + " new tokens exceed the context of " +
                      std::to_string(ctx));
  }
  KV_RETURN_IF_ERROR(kv.AddSequence(seq, o.cache_salt));
  SeqGuard guard{kv, seq};
  GenerateResult r;
  const AppendResult app = kv.Append(seq, prompt);
  if (!app.ok) return OutOfRange("the KV pool cannot hold the prompt");
  r.cached_prompt_tokens = app.prefix.cached_tokens;
  // Teacher forcing needs logits for every prompt position, so cached positions run again; the
  // prefix cache still serves their KV (the recomputed K/V are identical and not written twice).
  Sampler sampler(o.sampling);
  ForwardOutput out;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t pos = o.top_logits > 0 ? 0 : kv.NumComputed(seq);
  if (o.top_logits > 0 && kv.NumComputed(seq) > 0) {
    return InvalidArgument("top logits need a cold prompt (use a cache salt or disable the prefix cache)");
  }
  const int64_t n = int64_t(prompt.size());
  while (pos < n) {
    const int64_t len = std::min(o.prefill_chunk, n - pos);
    const SeqChunk chunk{seq, pos, prompt.subspan(size_t(pos), size_t(len)), o.top_logits > 0};
    KV_RETURN_IF_ERROR(model.Forward(std::span(&chunk, 1), kv, pool, &out));
    KV_RETURN_IF_ERROR(kv.MarkComputed(seq, pos + len));
    if (o.top_logits > 0) {
      for (int64_t i = 0; i < len; ++i) {
        r.prompt_top_logits.push_back(
            TopK(std::span(out.Row(0, i), size_t(out.n_vocab)), o.top_logits));
      }
    }
    r.prefill_tokens += len;
    pos += len;
  }
  r.prefill_seconds = SecondsSince(t0);
  // The last prompt row's logits choose the first output token.
  const float* logits = out.Row(0, o.top_logits > 0 ? int64_t(out.logits.size() / size_t(out.n_vocab)) - 1 : 0);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  const auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    const int32_t tok = sampler.Sample(std::span(logits, size_t(out.n_vocab)), history);
    r.last_logits.assign(logits, logits + out.n_vocab);
    r.output_ids.push_back(tok);
    history.push_back(tok);
    if (on_token && !on_token(tok)) break;
    if (o.stop_at_eos && tok == o.eos_token) break;
    if (i + 1 == o.max_new_tokens) break;
    if (!kv.Append(seq, std::span(&tok, 1)).ok) return OutOfRange("the KV pool is full");
    const SeqChunk chunk{seq, kv.NumTokens(seq) - 1, std::span(&history.back(), 1), false};
    KV_RETURN_IF_ERROR(model.Forward(std::span(&chunk, 1), kv, pool, &out));
    KV_RETURN_IF_ERROR(kv.MarkComputed(seq, kv.NumTokens(seq)));
    logits = out.Row(0);
  }
  r.decode_seconds = SecondsSince(t1);
  r.kv_bytes_in_use = kv.Stats().used_bytes;
  return r;
}

}  // namespace kvengine
