// GrowingTaskQueue: httplib's task queue (one task per accepted connection) with threads
// started on demand up to a maximum, instead of httplib's fixed pool of 8.
//
// Every open connection holds a thread for as long as it lives (a streamed response, a
// non-streamed one waiting for its tokens, or an idle keep-alive connection waiting for its
// next request), so serving hundreds of concurrent streams needs hundreds of threads; most of
// the time far fewer are needed, so they are started only when no idle one can take a task.
// Beyond `max_threads`, connections wait in FIFO order for a thread to free up.
//
// Threads: enqueue() from httplib's accept thread; shutdown() once, from the thread that ran
// listen(), after which the queued tasks have run and every worker has been joined.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvengine::server {

class GrowingTaskQueue : public httplib::TaskQueue {
 public:
  explicit GrowingTaskQueue(int max_threads) : max_threads_(max_threads < 1 ? 1 : max_threads) {}
  ~GrowingTaskQueue() override;
  GrowingTaskQueue(const GrowingTaskQueue&) = delete;
  GrowingTaskQueue& operator=(const GrowingTaskQueue&) = delete;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  int threads_started() const;

 private:
  void Worker();

  const int max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  int idle_ = 0;  // Workers waiting for a task.
  bool shutdown_ = false;
};

}  // namespace kvengine::server
