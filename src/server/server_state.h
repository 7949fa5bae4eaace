// ServerState: what the HTTP handlers share: the lifecycle phase, the served model (published
// once), the requests in flight (for draining), response counters for /metrics, and limits.
// Internal to server/; HttpServer owns it.
//
// Lifecycle: kLoading (health 503, model endpoints 503) -> kReady -> kDraining (health 503,
// new generation requests 503 with Retry-After, requests in flight run on) ; `aborting` is set
// when the drain deadline passes and makes the remaining handlers cancel and return.
//
// Threads: every method may be called from any HTTP thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/backend.h"
#include "server/chat_template.h"
#include "server/request_parse.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::server {

// The model being served: set once, when it has loaded.
struct ServedModel {
  std::string name;                      // "id" in /v1/models and "model" in responses.
  InferenceBackend* backend = nullptr;   // Not owned; outlives HttpServer::Shutdown().
  const Tokenizer* tokenizer = nullptr;  // Not owned; same lifetime.
  ChatTemplate chat_template;
  int64_t max_model_len = 0;
};

enum class Phase { kLoading, kReady, kDraining };

class ServerState {
 public:
  ServerState(ParseLimits limits, std::chrono::milliseconds poll_interval)
      : limits_(limits), poll_interval_(poll_interval) {}

  Phase phase() const { return phase_.load(std::memory_order_acquire); }
  // Null until SetModel; then stable for the server's life.
  const ServedModel* model() const { return phase() == Phase::kLoading ? nullptr : &model_; }
  void SetModel(ServedModel model);
  void BeginDrain() { phase_.store(Phase::kDraining, std::memory_order_release); }
  bool aborting() const { return aborting_.load(std::memory_order_acquire); }
  void Abort() { aborting_.store(true, std::memory_order_release); }

  // Counts a generation request in flight while alive (draining waits for them).
  class InflightGuard {
   public:
    explicit InflightGuard(ServerState* s) : s_(s) {}
    ~InflightGuard();
    InflightGuard(const InflightGuard&) = delete;
    InflightGuard& operator=(const InflightGuard&) = delete;

   private:
    ServerState* s_;
  };
  // A guard when the server is ready; otherwise the 503 to answer.
  std::optional<ApiError> BeginRequest(std::optional<InflightGuard>* guard);
  // Waits until no request is in flight or `deadline`; true when none is.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  int64_t in_flight() const;

  void CountResponse(int status);
  std::map<int, int64_t> responses() const;

  const ParseLimits& limits() const { return limits_; }
  std::chrono::milliseconds poll_interval() const { return poll_interval_; }

 private:
  const ParseLimits limits_;
  const std::chrono::milliseconds poll_interval_;
  std::atomic<Phase> phase_{Phase::kLoading};
  std::atomic<bool> aborting_{false};
  ServedModel model_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  int64_t in_flight_ = 0;
  std::map<int, int64_t> responses_;
};

// Writes `err` as OpenAI's error JSON (with Retry-After when it has one).
void ReplyError(httplib::Response& res, const ApiError& err);
void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body);

// Registers the endpoints (generate_routes.cc, info_routes.cc).
void RegisterGenerateRoutes(httplib::Server& http, ServerState& state);
void RegisterInfoRoutes(httplib::Server& http, ServerState& state);

}  // namespace kvengine::server
