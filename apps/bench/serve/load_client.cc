#include "bench/serve/load_client.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kvengine::loadgen {
namespace {

using Clock = CompletionSender::Clock;

// A turn ready to be sent, with the history its prompt starts with.
struct Ready {
  int32_t conversation = 0;
  int32_t turn = 0;
  std::vector<int32_t> history;  // Previous turn's prompt + its generated tokens.
};

// The shared state of one run: the ready queue, the records, the count of finished turns.
class LoadRun {
 public:
  LoadRun(const HttpTarget& target, const std::vector<Conversation>& conversations,
          const LoadOptions& options, Clock::time_point start, const ProgressFn& progress)
      : target_(target),
        conversations_(conversations),
        options_(options),
        start_(start),
        progress_(progress),
        total_(CountTurns(conversations)) {}

  LoadResult Run() {
    const int64_t slots = options_.max_concurrency > 0 ? options_.max_concurrency : kMaxWorkers;
    const int64_t workers = std::min<int64_t>(slots, int64_t(conversations_.size()));
    std::vector<std::thread> threads;
    for (int64_t i = 0; i < workers; ++i) threads.emplace_back([this] { Work(); });
    const std::vector<double> arrivals =
        PoissonArrivals(int64_t(conversations_.size()), options_.request_rate, options_.seed);
    for (size_t c = 0; c < conversations_.size(); ++c) {
      std::this_thread::sleep_until(start_ + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(arrivals[c])));
      Push(Ready{int32_t(c), 0, {}});
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return done_ == total_; });
      closed_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
    LoadResult result;
    result.records = std::move(records_);
    for (const RequestRecord& r : result.records) {
      result.duration_s = std::max(result.duration_s, r.end_s);
    }
    return result;
  }

 private:
  void Push(Ready r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(r));
    }
    cv_.notify_all();
  }

  void Work() {
    CompletionSender sender(target_, options_.model, start_, options_.read_timeout_s);
    std::vector<int32_t> generated;
    while (true) {
      Ready r;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return closed_ || !ready_.empty(); });
        if (ready_.empty()) return;  // Closed.
        r = std::move(ready_.front());
        ready_.pop_front();
      }
      const Turn& turn = conversations_[size_t(r.conversation)].turns[size_t(r.turn)];
      std::vector<int32_t> prompt = std::move(r.history);
      prompt.insert(prompt.end(), turn.message.begin(), turn.message.end());
      RequestRecord rec = sender.Send(prompt, turn.max_tokens, &generated);
      rec.conversation = r.conversation;
      rec.turn = r.turn;
      if (rec.ok) {
        // The history continues with what the server generated (or, from a server that does not
        // return ids, what the workload planned).
        const std::vector<int32_t>& out = generated.empty() ? turn.planned_output : generated;
        prompt.insert(prompt.end(), out.begin(), out.end());
      }
      Finish(std::move(rec), r, std::move(prompt));
    }
  }

  // Records a finished turn; queues the conversation's next turn, or after a failure records
  // the remaining turns as not sent.
  void Finish(RequestRecord rec, const Ready& r, std::vector<int32_t> history) {
    const Conversation& conv = conversations_[size_t(r.conversation)];
    const bool has_next = size_t(r.turn) + 1 < conv.turns.size();
    const bool ok = rec.ok;
    {
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(std::move(rec));
      ++done_;
      if (!ok) SkipRestLocked(r, records_.back().end_s);
      if (progress_) progress_(done_, total_);
      if (ok && has_next) ready_.push_back(Ready{r.conversation, r.turn + 1, std::move(history)});
    }
    cv_.notify_all();
  }

  void SkipRestLocked(const Ready& r, double now) {
    const Conversation& conv = conversations_[size_t(r.conversation)];
    for (size_t k = size_t(r.turn) + 1; k < conv.turns.size(); ++k) {
      RequestRecord skipped;
      skipped.conversation = r.conversation;
      skipped.turn = int32_t(k);
      skipped.max_tokens = conv.turns[k].max_tokens;
      skipped.send_s = skipped.end_s = now;
      skipped.error = "not sent: an earlier turn of its conversation failed";
      records_.push_back(std::move(skipped));
      ++done_;
    }
  }

  const HttpTarget& target_;
  const std::vector<Conversation>& conversations_;
  const LoadOptions& options_;
  const Clock::time_point start_;
  const ProgressFn& progress_;
  const int64_t total_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Ready> ready_;  // Guarded by mu_, like everything below.
  std::vector<RequestRecord> records_;
  int64_t done_ = 0;
  bool closed_ = false;
};

}  // namespace

LoadResult RunLoad(const HttpTarget& target, const std::vector<Conversation>& conversations,
                   const LoadOptions& options, Clock::time_point start,
                   const ProgressFn& progress) {
  if (conversations.empty()) return LoadResult{};
  LoadRun run(target, conversations, options, start, progress);
  return run.Run();
}

}  // namespace kvengine::loadgen
