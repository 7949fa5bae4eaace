#include "server/server_state.h"

#include <utility>

namespace kvengine::server {

void ServerState::SetModel(ServedModel model) {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_.load(std::memory_order_relaxed) != Phase::kLoading) return;  // Set once.
  model_ = std::move(model);
  phase_.store(Phase::kReady, std::memory_order_release);
}

ServerState::InflightGuard::~InflightGuard() {
  std::lock_guard<std::mutex> lock(s_->mu_);
  if (--s_->in_flight_ == 0) s_->idle_cv_.notify_all();
}

std::optional<ApiError> ServerState::BeginRequest(std::optional<InflightGuard>* guard) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (phase()) {
    case Phase::kLoading:
      return Unavailable503("the model is still loading", /*retry_after_s=*/5);
    case Phase::kDraining:
      return Unavailable503("the server is shutting down", /*retry_after_s=*/5);
    case Phase::kReady:
      break;
  }
  ++in_flight_;
  guard->emplace(this);
  return std::nullopt;
}

bool ServerState::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [&] { return in_flight_ == 0; });
}

int64_t ServerState::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

void ServerState::CountResponse(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++responses_[status];
}

std::map<int, int64_t> ServerState::responses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return responses_;
}

void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(DumpJson(body), "application/json");
}

void ReplyError(httplib::Response& res, const ApiError& err) {
  if (err.retry_after_s > 0) res.set_header("Retry-After", std::to_string(err.retry_after_s));
  ReplyJson(res, err.http_status, err.ToJson());
}

}  // namespace kvengine::server
