#include "bench/serve/completion_sender.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "bench/serve/completion_chunk.h"
#include "bench/serve/sse_reader.h"

namespace kvengine::loadgen {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;  // Bytes of a non-200 answer kept for its message.

// The state of one streamed answer while it arrives.
struct StreamState {
  RequestRecord* record = nullptr;
  std::vector<int32_t>* generated = nullptr;
  int status = 0;
  std::string error_body;  // A non-200 answer.
  SseReader sse;
  std::vector<std::string> events;
  int64_t counted_tokens = 0;
  bool done = false;  // [DONE] arrived (at done_s).
  double done_s = 0;
  std::string failure;  // An error event or a malformed stream.

  // Applies the events completed so far, which arrived at `now`; false to stop reading (an
  // error).
  bool Apply(double now) {
    for (const std::string& data : events) {
      const CompletionChunk c = ParseCompletionChunk(data);
      if (c.kind == CompletionChunk::Kind::kError) {
        failure = c.error;
        return false;
      }
      if (c.kind == CompletionChunk::Kind::kDone) {
        if (!done) done_s = now;
        done = true;
        continue;
      }
      if (c.tokens > 0) {
        record->chunk_s.push_back(now);
        counted_tokens += c.tokens;
      }
      generated->insert(generated->end(), c.token_ids.begin(), c.token_ids.end());
      if (c.usage) {
        if (c.usage->completion_tokens >= 0) record->output_tokens = c.usage->completion_tokens;
        record->cached_tokens = c.usage->cached_tokens;
      }
    }
    events.clear();
    return true;
  }
};

}  // namespace

CompletionSender::CompletionSender(const HttpTarget& target, std::string model,
                                   Clock::time_point start, int read_timeout_s)
    : target_(target),
      model_(std::move(model)),
      start_(start),
      client_(MakeClient(target, read_timeout_s)) {}

CompletionSender::~CompletionSender() = default;

double CompletionSender::Now() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string CompletionSender::Body(const std::string& model, const std::vector<int32_t>& prompt,
                                   int64_t max_tokens) {
  nlohmann::json j = {{"model", model},
                      {"prompt", prompt},
                      {"max_tokens", max_tokens},
                      {"ignore_eos", true},
                      {"temperature", 0},
                      {"stream", true},
                      {"stream_options", {{"include_usage", true}}},
                      {"return_token_ids", true}};
  return j.dump();
}

RequestRecord CompletionSender::Send(const std::vector<int32_t>& prompt, int64_t max_tokens,
                                     std::vector<int32_t>* generated) {
  RequestRecord record;
  record.prompt_tokens = int64_t(prompt.size());
  record.max_tokens = max_tokens;
  record.output_tokens = -1;
  generated->clear();
  StreamState st;
  st.record = &record;
  st.generated = generated;

  httplib::Request req;
  req.method = "POST";
  req.path = target_.base_path + "/v1/completions";
  req.set_header("Accept", "text/event-stream");
  req.body = Body(model_, prompt, max_tokens);
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&st](const httplib::Response& res) {
    st.status = res.status;
    return true;
  };
  req.content_receiver = [this, &st](const char* data, size_t n, uint64_t, uint64_t) {
    if (st.status != 200) {
      const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, st.error_body.size());
      st.error_body.append(data, std::min(n, room));
      return true;
    }
    if (!st.sse.Feed(std::string_view(data, n), &st.events)) {
      st.failure = st.sse.error();
      return false;
    }
    return st.Apply(Now());
  };
  record.send_s = Now();
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = client_->send(req, res, err);
  record.end_s = st.done ? st.done_s : Now();
  if (!st.failure.empty()) {
    record.error = st.failure;
  } else if (st.done) {
    record.ok = true;
  } else if (!sent && err != httplib::Error::Canceled) {
    record.error = "POST /v1/completions: " + httplib::to_string(err);
  } else if (st.status != 200) {
    record.error = HttpErrorMessage(st.status, st.error_body);
  } else {
    record.error = "the stream ended before data: [DONE]";
  }
  if (record.output_tokens < 0) record.output_tokens = st.counted_tokens;
  if (record.ok && record.chunk_s.empty()) {
    record.ok = false;
    record.error = "the stream carried no output token";
  }
  return record;
}

}  // namespace kvengine::loadgen
