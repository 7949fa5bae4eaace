#include "server/server_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "base/check.h"
#include "gguf/gguf_reader.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine::server::testing {

const Tokenizer& TinyTokenizer() {
  static const Tokenizer* tokenizer = [] {
    Result<SyntheticModelSpec> spec = FindSyntheticPreset("tiny");
    KV_CHECK(spec.ok());
    Result<GgufWriter> writer = BuildSyntheticWriter(*spec, nullptr);
    KV_CHECK(writer.ok()) << writer.status().ToString();
    return LeakedTokenizerOf(*writer);
  }();
  return *tokenizer;
}

const Tokenizer* LeakedTokenizerOf(const GgufWriter& writer) {
  Result<std::vector<uint8_t>> bytes = writer.WriteToBytes();
  KV_CHECK(bytes.ok());
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes);
  KV_CHECK(file.ok());
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::FromGguf(**file);
  KV_CHECK(t.ok()) << t.status().ToString();
  return std::move(t).value().release();
}

FakeBackend::FakeBackend(std::vector<int32_t> script, std::chrono::milliseconds step,
                         int max_running, int eos)
    : script_(std::move(script)), step_(step), max_running_(max_running), eos_(eos) {
  thread_ = std::thread([this] { Loop(); });
}

FakeBackend::~FakeBackend() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result<RequestId> FakeBackend::Submit(RequestParams params, EventCallback on_event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (int(running_.size()) >= max_running_) return Unavailable("the waiting queue is full");
  if (params.prompt.empty()) return InvalidArgument("empty prompt");
  const RequestId id = next_id_++;
  Running r;
  r.produced.assign(size_t(params.n), 0);
  r.done.assign(size_t(params.n), false);
  r.params = std::move(params);
  r.on_event = std::move(on_event);
  r.fail = fail_next_.exchange(false);
  running_.emplace(id, std::move(r));
  ++submits_;
  cv_.notify_all();
  return id;
}

RequestEvent FakeBackend::FinalEvent(RequestId id, const Running& r, int choice,
                                     FinishReason reason) {
  RequestEvent e;
  e.id = id;
  e.choice = choice;
  e.finish_reason = reason;
  e.prompt_tokens = int64_t(r.params.prompt.size());
  e.completion_tokens = r.produced[size_t(choice)];
  return e;
}

void FakeBackend::Cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end()) return;
  ++cancels_;
  // As the engine does: every open choice ends with kCancelled.
  for (size_t c = 0; c < it->second.done.size(); ++c) {
    if (it->second.done[c]) continue;
    it->second.on_event(FinalEvent(id, it->second, int(c), FinishReason::kCancelled));
  }
  running_.erase(it);
  cv_.notify_all();
}

void FakeBackend::StopChoice(RequestId id, int choice) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end() || choice < 0 || size_t(choice) >= it->second.done.size() ||
      it->second.done[size_t(choice)] || it->second.produced[size_t(choice)] == 0) {
    return;
  }
  ++choice_stops_;
  it->second.done[size_t(choice)] = true;
  it->second.on_event(FinalEvent(id, it->second, choice, FinishReason::kStop));
  if (std::all_of(it->second.done.begin(), it->second.done.end(), [](bool d) { return d; })) {
    running_.erase(it);
  }
  cv_.notify_all();
}

EngineStats FakeBackend::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s;
  s.requests_running = int64_t(running_.size());
  KvGroupStats g;
  g.capacity_blocks = 1000;
  g.used_blocks = int32_t(running_.size());
  g.free_blocks = g.capacity_blocks - g.used_blocks;
  s.kv.groups.push_back(g);
  s.kv.block_size = 16;
  s.kv_usage = g.used_blocks / 1000.0;
  return s;
}

int64_t FakeBackend::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int64_t(running_.size());
}

bool FakeBackend::WaitIdle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return running_.empty(); });
}

void FakeBackend::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, step_, [&] { return stop_; });
    if (stop_ || paused_) continue;
    for (auto it = running_.begin(); it != running_.end();) {
      Running& r = it->second;
      bool all_done = true;
      for (size_t c = 0; c < r.done.size(); ++c) {
        if (r.done[c]) continue;
        RequestEvent e;
        e.id = it->first;
        e.choice = int(c);
        e.has_token = true;
        e.token = script_[size_t(r.produced[c] + int64_t(c)) % script_.size()];
        e.logprob = -0.5f;
        for (int k = 0; k < r.params.logprobs; ++k) {
          e.top_logprobs.push_back({e.token + k, -0.5f - k});
        }
        ++r.produced[c];
        r.on_event(e);
        RequestEvent fin;
        fin.id = it->first;
        fin.choice = int(c);
        fin.prompt_tokens = int64_t(r.params.prompt.size());
        fin.cached_prompt_tokens = 16;
        fin.completion_tokens = r.produced[c];
        if (r.fail) {
          fin.finish_reason = FinishReason::kError;
          fin.error = "scripted failure";
        } else if (e.token == eos_ && !r.params.ignore_eos) {
          fin.finish_reason = FinishReason::kStop;
        } else if (r.produced[c] >= r.params.max_tokens) {
          fin.finish_reason = FinishReason::kLength;
        }
        if (fin.finish_reason != FinishReason::kNone) {
          r.done[c] = true;
          r.on_event(fin);
        } else {
          all_done = false;
        }
      }
      it = all_done ? running_.erase(it) : std::next(it);
    }
    cv_.notify_all();
  }
}

int ConnectLoopback(int port, int receive_buffer_bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (receive_buffer_bytes > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes,
                                             sizeof(receive_buffer_bytes)) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

std::string ReadUntil(int fd, const std::string& needle, std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (out.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

std::string PostRequest(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
         "Content-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace kvengine::server::testing
