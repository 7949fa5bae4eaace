// Generation: the server's view of one submitted request. Engine events (token ids) go in;
// per-choice text deltas that are safe to show come out, together with logprobs, finish
// reasons and usage. Streaming and non-streaming handlers share it: the first sends each batch
// of deltas as SSE chunks, the second concatenates them.
//
// Per choice: StreamDecoder (text is always valid UTF-8, a character split over byte tokens is
// held until complete) -> StopMatcher (a stop string never shows, not even partly). A choice
// ends at the engine's final event for it, or earlier at a stop string; the handler then tells
// the engine to stop that choice (TakeStringStops), and tokens the engine still sends for an
// ended choice are ignored.
//
// EventQueue carries events from the engine thread to the HTTP thread.
//
// Threads: EventQueue::Push from the engine thread, everything else from the one HTTP thread
// that owns the request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kvengine/engine.h"
#include "server/stop_matcher.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server {

// Engine events waiting for the HTTP thread. Unbounded, but a request produces at most
// n * (max_tokens + 1) events.
class EventQueue {
 public:
  void Push(const RequestEvent& event);
  // Moves every queued event into *out (cleared first); waits up to `timeout` when none is
  // queued. Returns false when none came.
  bool WaitPop(std::chrono::milliseconds timeout, std::vector<RequestEvent>* out);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RequestEvent> events_;
};

struct TokenText {
  std::string text;            // The token's text, invalid UTF-8 replaced by U+FFFD.
  std::vector<uint8_t> bytes;  // The token's raw bytes.
};

struct LogprobEntry {
  TokenText token;
  float logprob = 0;
  int64_t text_offset = 0;  // Bytes of the choice's text before this token.
  struct Alternative {
    TokenText token;
    float logprob = 0;
  };
  std::vector<Alternative> top;
};

// What one choice produced since the last TakeDeltas().
struct ChoiceDelta {
  int index = 0;
  std::string text;
  std::vector<LogprobEntry> logprobs;
  // The tokens generated since the last delta, stop-string tokens included (only with
  // return_token_ids; then every token makes a delta, even one whose text is held back).
  std::vector<int32_t> token_ids;
  std::string finish_reason;  // Non-empty once the choice ended: "stop" or "length".
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

class Generation {
 public:
  // `top_logprobs` < 0: no logprobs; else the alternatives listed per token. `tokenizer` must
  // outlive this object. `return_token_ids`: deltas carry token ids (ChoiceDelta::token_ids).
  Generation(const Tokenizer& tokenizer, int n, const std::vector<std::string>& stops,
             int top_logprobs, int64_t prompt_tokens, bool return_token_ids = false);

  void Apply(const RequestEvent& event);
  // The choices that changed since the last call, in index order.
  std::vector<ChoiceDelta> TakeDeltas();
  // Choices that a stop string ended since the last call while the engine still runs them.
  std::vector<int> TakeStringStops();

  // Every choice has ended (normally, or through an error or cancellation).
  bool done() const { return ended_ == int(choices_.size()); }
  // Every choice got its final event from the engine (nothing of the request remains there).
  bool engine_done() const { return engine_finals_ == int(choices_.size()); }
  // A choice ended with kError or kCancelled: the request failed. The message says why.
  const std::optional<std::string>& failure() const { return failure_; }
  bool cancelled() const { return cancelled_; }
  Usage usage() const;

 private:
  struct Choice {
    explicit Choice(const Tokenizer& t, const std::vector<std::string>& stops)
        : decoder(t), matcher(stops) {}
    StreamDecoder decoder;
    StopMatcher matcher;
    bool ended = false;
    bool engine_final = false;
    int64_t tokens = 0;  // Tokens received while the choice was open.
    int64_t engine_completion_tokens = -1;
    int64_t text_bytes = 0;  // Bytes of text released so far.
    ChoiceDelta pending;
    bool changed = false;
  };

  TokenText Text(int32_t token) const;
  void Release(Choice& c, const std::string& text);
  void End(Choice& c, std::string finish_reason);

  const Tokenizer& tokenizer_;
  int top_logprobs_;
  bool return_token_ids_;
  int64_t prompt_tokens_;
  int64_t cached_tokens_ = 0;
  std::vector<Choice> choices_;
  int ended_ = 0;
  int engine_finals_ = 0;
  std::optional<std::string> failure_;
  std::vector<int> string_stops_;  // Not taken yet.
  bool cancelled_ = false;
};

}  // namespace kvengine::server
