#include "server/task_queue.h"

#include <utility>

namespace kvengine::server {

GrowingTaskQueue::~GrowingTaskQueue() { shutdown(); }

void GrowingTaskQueue::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // httplib enqueues only before shutdown(); every task must run (it owns a socket).
    tasks_.push_back(std::move(fn));
    // Start a worker when every started one is busy (idle_ counts those that will take a
    // queued task) and the cap allows.
    if (idle_ < int(tasks_.size()) && int(threads_.size()) < max_threads_) {
      threads_.emplace_back([this] { Worker(); });
      return;
    }
  }
  cv_.notify_one();
}

void GrowingTaskQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

int GrowingTaskQueue::threads_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(threads_.size());
}

void GrowingTaskQueue::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return !tasks_.empty() || shutdown_; });
    --idle_;
    if (tasks_.empty()) return;  // Shut down and nothing left to run.
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // Destroy the task's state outside the lock.
    lock.lock();
  }
}

}  // namespace kvengine::server
