// POST /v1/completions and /v1/chat/completions: parse, build the engine request, submit, then
// either stream SSE chunks or wait for the whole answer. Cancellation is RAII: a Job whose
// request the engine has not finished cancels it when destroyed, whichever way the HTTP side
// ended (client gone, write failed, server aborting, stop string reached).
#include <httplib.h>

#include <chrono>
#include <memory>
#include <vector>

#include "server/connection_watch.h"
#include "server/generation.h"
#include "server/openai_format.h"
#include "server/prompt_build.h"
#include "server/server_state.h"

namespace kvengine::server {
namespace {

using Clock = std::chrono::steady_clock;

// How long to wait, after cancelling a request whose choices all ended at stop strings, for
// the engine's final events (they carry the prompt's cached-token count for usage).
constexpr std::chrono::milliseconds kFinalEventWait{250};
// Status recorded for a request whose client went away (nginx's convention); never sent.
constexpr int kClientClosedRequest = 499;

class Job {
 public:
  Job(ServerState& state, const ServedModel& model, const GenerationRequest& req,
      const BuiltRequest& built, const httplib::Request& http_req)
      : state_(state),
        backend_(*model.backend),
        queue_(std::make_shared<EventQueue>()),
        generation_(*model.tokenizer, req.n, built.stop, req.logprobs ? req.top_logprobs : -1,
                    int64_t(built.params.prompt.size()), req.return_token_ids),
        meta_(NewResponseMeta(req.endpoint, model.name, req.logprobs)),
        include_usage_(req.include_usage),
        first_chunk_(size_t(req.n), true),
        watch_(http_req.local_addr, http_req.local_port, http_req.remote_addr,
               http_req.remote_port) {
    if (req.return_token_ids) {
      meta_.token_ids = true;
      meta_.prompt_token_ids = built.params.prompt;
    }
  }

  ~Job() {
    if (submitted_ && !generation_.engine_done()) backend_.Cancel(id_);
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Submits to the engine unless the client has already gone.
  std::optional<ApiError> Submit(RequestParams params) {
    if (watch_.Closed()) {
      ApiError gone;
      gone.http_status = kClientClosedRequest;
      gone.message = "client closed the connection";
      return gone;
    }
    std::shared_ptr<EventQueue> q = queue_;
    Result<RequestId> id =
        backend_.Submit(std::move(params), [q](const RequestEvent& e) { q->Push(e); });
    if (!id.ok()) return FromEngineStatus(id.status());
    id_ = *id;
    submitted_ = true;
    return std::nullopt;
  }

  // Non-streamed: waits for every choice, then answers.
  void RunToCompletion(httplib::Response& res) {
    std::vector<ChoiceDelta> choices(first_chunk_.size());
    for (size_t i = 0; i < choices.size(); ++i) choices[i].index = int(i);
    Clock::time_point last_check = Clock::now();
    while (!generation_.done()) {
      Pump();
      for (const ChoiceDelta& d : generation_.TakeDeltas()) {
        AppendDelta(d, &choices[size_t(d.index)]);
      }
      if (generation_.done()) break;
      if (state_.aborting()) {
        return ReplyError(res, Unavailable503("the server is shutting down", 5));
      }
      if (Clock::now() - last_check >= state_.poll_interval()) {
        last_check = Clock::now();
        if (watch_.Closed()) {  // The destructor cancels; nobody reads the answer.
          res.status = kClientClosedRequest;
          return;
        }
      }
    }
    if (generation_.failure()) return ReplyError(res, FailureError());
    SettleEngine();
    ReplyJson(res, 200, ResponseJson(meta_, choices, generation_.usage()));
  }

  // Streamed: one call of httplib's chunked content provider. Writes what arrived within a
  // poll interval; false aborts the response (client gone or a write failed).
  bool StreamStep(httplib::DataSink& sink) {
    const bool got_events = Pump();
    if (state_.aborting()) return Fail(sink, Unavailable503("the server is shutting down", 5));
    if (!got_events) return !watch_.Closed();
    for (const ChoiceDelta& d : generation_.TakeDeltas()) {
      const bool first = first_chunk_[size_t(d.index)];
      first_chunk_[size_t(d.index)] = false;
      if (!Write(sink, SseEvent(ChunkJson(meta_, d, first, include_usage_)))) return false;
    }
    if (generation_.failure()) return Fail(sink, FailureError());
    if (!generation_.done()) return true;
    SettleEngine();
    if (include_usage_ && !Write(sink, SseEvent(UsageChunkJson(meta_, generation_.usage())))) {
      return false;
    }
    if (!Write(sink, std::string(kSseDone))) return false;
    sink.done();
    return true;
  }

 private:
  // Applies whatever events arrive within one poll interval; false when none came.
  bool Pump() {
    if (!queue_->WaitPop(state_.poll_interval(), &events_)) return false;
    for (const RequestEvent& e : events_) generation_.Apply(e);
    // A choice a stop string ended stops in the engine too (its blocks go, the rest go on).
    for (int choice : generation_.TakeStringStops()) backend_.StopChoice(id_, choice);
    return true;
  }

  // Once every choice has ended on our side: cancel whatever the engine still runs (the
  // StopChoice calls normally ended it already), and give its final events (usage figures) a
  // moment to arrive.
  void SettleEngine() {
    if (generation_.engine_done()) return;
    backend_.Cancel(id_);
    const Clock::time_point deadline = Clock::now() + kFinalEventWait;
    while (!generation_.engine_done() && Clock::now() < deadline) Pump();
  }

  ApiError FailureError() const {
    if (generation_.cancelled()) return Unavailable503(*generation_.failure(), 5);
    return InternalError(*generation_.failure());
  }

  bool Write(httplib::DataSink& sink, const std::string& s) {
    return sink.write(s.data(), s.size());
  }

  // An error inside a stream: `data: {"error": ...}`, then [DONE].
  bool Fail(httplib::DataSink& sink, const ApiError& err) {
    if (!Write(sink, SseEvent(err.ToJson())) || !Write(sink, std::string(kSseDone))) return false;
    sink.done();
    return true;
  }

  ServerState& state_;
  InferenceBackend& backend_;
  std::shared_ptr<EventQueue> queue_;  // Shared with the engine's callback.
  Generation generation_;
  ResponseMeta meta_;
  bool include_usage_;
  std::vector<bool> first_chunk_;  // [choice] no chunk sent yet.
  ConnectionWatch watch_;
  std::vector<RequestEvent> events_;
  RequestId id_ = 0;
  bool submitted_ = false;
};

void HandleGenerate(Endpoint endpoint, ServerState& state, const httplib::Request& req,
                    httplib::Response& res) {
  auto guard = std::make_shared<std::optional<ServerState::InflightGuard>>();
  if (auto err = state.BeginRequest(guard.get())) return ReplyError(res, *err);
  const ServedModel& model = *state.model();
  GenerationRequest gr;
  if (auto err = ParseGenerationRequest(endpoint, req.body, state.limits(), &gr)) {
    return ReplyError(res, *err);
  }
  BuiltRequest built;
  if (auto err = BuildRequest(gr, *model.tokenizer, model.chat_template,
                              ModelLimits{model.max_model_len}, &built)) {
    return ReplyError(res, *err);
  }
  auto job = std::make_shared<Job>(state, model, gr, built, req);
  if (auto err = job->Submit(std::move(built.params))) {
    if (err->http_status == kClientClosedRequest) {
      res.status = kClientClosedRequest;
      return;
    }
    return ReplyError(res, *err);
  }
  if (!gr.stream) return job->RunToCompletion(res);
  res.set_header("Cache-Control", "no-cache");
  // The provider and releaser keep the job (and the in-flight guard) alive until httplib is
  // done with the response; the releaser drops them at once, whichever way it ended.
  auto holder = std::make_shared<std::shared_ptr<Job>>(std::move(job));
  res.set_chunked_content_provider(
      "text/event-stream",
      [holder](size_t /*offset*/, httplib::DataSink& sink) {
        return *holder != nullptr && (*holder)->StreamStep(sink);
      },
      [holder, guard](bool /*success*/) {
        holder->reset();
        guard->reset();
      });
}

}  // namespace

void RegisterGenerateRoutes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/completions", [&state](const httplib::Request& req, httplib::Response& res) {
    HandleGenerate(Endpoint::kCompletions, state, req, res);
  });
  http.Post("/v1/chat/completions", [&state](const httplib::Request& req, httplib::Response& res) {
    HandleGenerate(Endpoint::kChat, state, req, res);
  });
}

}  // namespace kvengine::server
