#include "bench/serve/metrics_sampler.h"

#include <httplib.h>

#include <memory>

namespace kvengine::loadgen {
namespace {

constexpr int kMetricsReadTimeoutS = 5;

}  // namespace

Result<ServerSnapshot> FetchSnapshot(httplib::Client& client, const HttpTarget& target) {
  KV_ASSIGN_OR_RETURN(std::string text, GetText(client, target, "/metrics"));
  KV_ASSIGN_OR_RETURN(std::vector<PromSample> samples, ParsePrometheusText(text));
  return SnapshotFromSamples(samples);
}

MetricsSampler::MetricsSampler(const HttpTarget& target, Clock::time_point start,
                               std::chrono::milliseconds interval)
    : target_(target), start_(start), interval_(interval), thread_([this] { Loop(); }) {}

MetricsSampler::~MetricsSampler() { Stop(); }

std::vector<TimelineSample> MetricsSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  return std::move(samples_);
}

void MetricsSampler::SampleOnce(httplib::Client& client) {
  Result<ServerSnapshot> s = FetchSnapshot(client, target_);
  if (!s.ok() || !s->kv_usage) return;  // A missed sample is only a gap in the chart.
  TimelineSample t;
  t.t_s = std::chrono::duration<double>(Clock::now() - start_).count();
  t.kv_usage = *s->kv_usage;
  t.running = s->running.value_or(0);
  t.waiting = s->waiting.value_or(0);
  samples_.push_back(t);
}

void MetricsSampler::Loop() {
  std::unique_ptr<httplib::Client> client = MakeClient(target_, kMetricsReadTimeoutS);
  Clock::time_point next = Clock::now();
  while (true) {
    SampleOnce(*client);
    next += interval_;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, next, [&] { return stop_; })) break;
  }
  SampleOnce(*client);
}

}  // namespace kvengine::loadgen
