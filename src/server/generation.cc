#include "server/generation.h"

#include <algorithm>
#include <utility>

#include "tokenizer/utf8.h"

namespace kvengine::server {

void EventQueue::Push(const RequestEvent& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }
  cv_.notify_one();
}

bool EventQueue::WaitPop(std::chrono::milliseconds timeout, std::vector<RequestEvent>* out) {
  out->clear();
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  out->swap(events_);
  return true;
}

Generation::Generation(const Tokenizer& tokenizer, int n, const std::vector<std::string>& stops,
                       int top_logprobs, int64_t prompt_tokens, bool return_token_ids)
    : tokenizer_(tokenizer),
      top_logprobs_(top_logprobs),
      return_token_ids_(return_token_ids),
      prompt_tokens_(prompt_tokens) {
  choices_.reserve(size_t(std::max(n, 1)));
  for (int i = 0; i < std::max(n, 1); ++i) {
    choices_.emplace_back(tokenizer, stops);
    choices_.back().pending.index = i;
  }
}

TokenText Generation::Text(int32_t token) const {
  const int32_t ids[1] = {token};
  const std::string raw = tokenizer_.Decode(ids);
  return TokenText{SanitizeUtf8(raw), std::vector<uint8_t>(raw.begin(), raw.end())};
}

void Generation::Release(Choice& c, const std::string& text) {
  if (text.empty()) return;
  c.pending.text += text;
  c.text_bytes += int64_t(text.size());
  c.changed = true;
}

void Generation::End(Choice& c, std::string finish_reason) {
  if (c.ended) return;
  c.ended = true;
  ++ended_;
  c.pending.finish_reason = std::move(finish_reason);
  c.changed = true;
}

void Generation::Apply(const RequestEvent& e) {
  if (e.choice < 0 || e.choice >= int(choices_.size())) return;  // Not ours: ignore.
  Choice& c = choices_[size_t(e.choice)];
  if (e.has_token && !c.ended) {
    ++c.tokens;
    if (return_token_ids_) {
      c.pending.token_ids.push_back(e.token);
      c.changed = true;
    }
    if (top_logprobs_ >= 0) {
      LogprobEntry entry;
      entry.token = Text(e.token);
      entry.logprob = e.logprob;
      entry.text_offset = c.text_bytes;
      const size_t k = std::min(e.top_logprobs.size(), size_t(top_logprobs_));
      for (size_t i = 0; i < k; ++i) {
        entry.top.push_back({Text(e.top_logprobs[i].token), e.top_logprobs[i].logprob});
      }
      c.pending.logprobs.push_back(std::move(entry));
      c.changed = true;
    }
    Release(c, c.matcher.Push(c.decoder.Push(e.token)));
    if (c.matcher.stopped()) {
      End(c, "stop");
      string_stops_.push_back(e.choice);
    }
  }
  if (e.finish_reason == FinishReason::kNone || c.engine_final) return;
  c.engine_final = true;
  ++engine_finals_;
  if (e.prompt_tokens > 0) prompt_tokens_ = e.prompt_tokens;
  cached_tokens_ = std::max(cached_tokens_, e.cached_prompt_tokens);
  c.engine_completion_tokens = e.completion_tokens;
  if (c.ended) return;
  switch (e.finish_reason) {
    case FinishReason::kStop:
    case FinishReason::kLength:
      Release(c, c.matcher.Push(c.decoder.Finish()));
      Release(c, c.matcher.Finish());
      End(c, c.matcher.stopped() || e.finish_reason == FinishReason::kStop ? "stop" : "length");
      return;
    case FinishReason::kCancelled:
      cancelled_ = true;
      if (!failure_) failure_ = "the request was cancelled (the server is shutting down)";
      End(c, "abort");
      return;
    case FinishReason::kError:
      if (!failure_) failure_ = e.error.empty() ? std::string("generation failed") : e.error;
      End(c, "error");
      return;
    case FinishReason::kNone:
      return;
  }
}

std::vector<ChoiceDelta> Generation::TakeDeltas() {
  std::vector<ChoiceDelta> out;
  for (Choice& c : choices_) {
    if (!c.changed) continue;
    out.push_back(std::exchange(c.pending, ChoiceDelta{}));
    c.pending.index = out.back().index;
    c.changed = false;
  }
  return out;
}

std::vector<int> Generation::TakeStringStops() {
  std::vector<int> out;
  out.swap(string_stops_);
  return out;
}

Usage Generation::usage() const {
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  u.cached_tokens = cached_tokens_;
  for (const Choice& c : choices_) {
    // The engine's count when it ended the choice; ours when a stop string ended it first.
    const bool engine_ended = c.engine_final && !c.matcher.stopped();
    u.completion_tokens +=
        engine_ended && c.engine_completion_tokens >= 0 ? c.engine_completion_tokens : c.tokens;
  }
  return u;
}

}  // namespace kvengine::server
