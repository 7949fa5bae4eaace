#include "server/prompt_build.h"

#include <mutex>
#include <random>

#include <fmt/format.h>

namespace kvengine::server {

int32_t SpecialTokenId(const Tokenizer& tokenizer, std::string_view marker) {
  if (marker.empty()) return kNoToken;
  const std::vector<int32_t> ids = tokenizer.Encode(marker, /*add_special=*/false,
                                                    /*parse_special=*/true);
  // A marker of several characters that encodes to one id is that special token; anything else
  // is ordinary text (a model whose vocabulary lacks the marker).
  return ids.size() == 1 && marker.size() > 1 ? ids[0] : kNoToken;
}

std::vector<int32_t> TokenizeChat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                  std::span<const ChatMessage> messages) {
  const std::vector<ChatSegment> rendered = chat_template.RenderSegments(messages);
  std::vector<EncodeSegment> segments;
  segments.reserve(rendered.size());
  for (const ChatSegment& seg : rendered) {
    segments.push_back(EncodeSegment{seg.text, /*parse_special=*/!seg.content});
  }
  return tokenizer.Encode(segments, /*add_special=*/true);
}

uint64_t RandomSeed() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

std::optional<ApiError> BuildRequest(const GenerationRequest& req, const Tokenizer& tokenizer,
                                     const ChatTemplate& chat_template, const ModelLimits& limits,
                                     BuiltRequest* out) {
  *out = BuiltRequest();
  RequestParams& p = out->params;
  const bool chat = req.endpoint == Endpoint::kChat;
  const char* prompt_param = chat ? "messages" : "prompt";
  if (chat) {
    p.prompt = TokenizeChat(tokenizer, chat_template, req.messages);
    const int32_t eot = SpecialTokenId(tokenizer, chat_template.end_of_turn());
    if (eot != kNoToken) p.stop_token_ids.push_back(eot);
    out->stop = chat_template.implicit_stops();
  } else if (req.prompt_is_ids) {
    p.prompt.reserve(req.prompt_ids.size());
    for (size_t i = 0; i < req.prompt_ids.size(); ++i) {
      const int64_t id = req.prompt_ids[i];
      if (id < 0 || id >= tokenizer.vocab_size()) {
        return BadRequest(prompt_param,
                          fmt::format("prompt[{}] = {} is outside the vocabulary [0, {})", i, id,
                                      tokenizer.vocab_size()));
      }
      p.prompt.push_back(static_cast<int32_t>(id));
    }
  } else {
    p.prompt = tokenizer.Encode(req.prompt_text, req.add_special_tokens);
  }
  if (p.prompt.empty()) {
    return BadRequest(prompt_param, fmt::format("{} is empty (no tokens)", prompt_param));
  }
  const int64_t prompt_len = static_cast<int64_t>(p.prompt.size());
  const int64_t room = limits.max_model_len - prompt_len;
  if (room < 1) {
    ApiError e = BadRequest(
        prompt_param,
        fmt::format("This model's maximum context length is {} tokens; the {} is {} tokens, "
                    "which leaves no room for output. Shorten the {}.",
                    limits.max_model_len, prompt_param, prompt_len, prompt_param));
    e.code = "context_length_exceeded";
    return e;
  }
  if (req.max_tokens) {
    if (*req.max_tokens > room) {
      ApiError e = BadRequest(
          "max_tokens",
          fmt::format("This model's maximum context length is {} tokens; you requested {} "
                      "tokens ({} in the {}, {} for the completion). Reduce max_tokens to at "
                      "most {} or shorten the {}.",
                      limits.max_model_len, prompt_len + *req.max_tokens, prompt_len, prompt_param,
                      *req.max_tokens, room, prompt_param));
      e.code = "context_length_exceeded";
      return e;
    }
    p.max_tokens = *req.max_tokens;
  } else {
    // The default never errors: it is clamped to what the context leaves.
    p.max_tokens = chat ? room : std::min(kDefaultCompletionMaxTokens, room);
  }
  for (int32_t id : req.stop_token_ids) {
    if (id >= tokenizer.vocab_size()) {
      return BadRequest("stop_token_ids", fmt::format("stop token {} is outside the vocabulary "
                                                      "[0, {})",
                                                      id, tokenizer.vocab_size()));
    }
    p.stop_token_ids.push_back(id);
  }
  p.n = req.n;
  p.sampling = req.sampling;
  if (!req.seed_given) p.sampling.seed = RandomSeed();
  // The engine computes top-K alternatives when logprobs > 0; a sampled token's own logprob
  // needs at least 1 as well.
  p.logprobs = req.logprobs ? std::max(1, req.top_logprobs) : 0;
  p.ignore_eos = req.ignore_eos;
  p.cache_salt = req.cache_salt;
  for (const std::string& s : req.stop) out->stop.push_back(s);
  return std::nullopt;
}

}  // namespace kvengine::server
