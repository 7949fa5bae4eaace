#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvengine {
namespace {

// Pause instructions a waiting thread spins through before it sleeps (a few tens of microseconds
// on current x86 cores, where one pause takes tens to ~140 cycles).
constexpr int kSpinIterations = 4000;

// The pool whose chunk this thread is running, to catch nested ParallelFor calls on the same pool.
thread_local const ThreadPool* tls_running_pool = nullptr;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpinIterations; returns done().
template <class Done>
bool SpinUntil(const Done& done) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (done()) return true;
    CpuRelax();
  }
  return done();
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  KV_CHECK(num_threads >= 1) << "num_threads=" << num_threads;
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  try {
    for (int i = 0; i + 1 < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  } catch (...) {
    // A thread the system refuses (std::system_error): stop and join those already started, so
    // the exception reaches the caller instead of a joinable std::thread terminating the process.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true, std::memory_order_release);
    }
    wake_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  wake_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::DefaultThreadCount() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void ThreadPool::ChunkBounds(int64_t n, int64_t num_chunks, int64_t index, int64_t* begin,
                             int64_t* end) {
  // The first n % num_chunks chunks get one extra index. No product of n and index is formed, so
  // any n fits.
  const int64_t base = n / num_chunks;
  const int64_t extra = n % num_chunks;
  *begin = index * base + std::min(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

void ThreadPool::RunChunk(int64_t index) {
  const ThreadPool* outer = tls_running_pool;
  tls_running_pool = this;
  if (job_grain_ > 0) {
    for (;;) {
      const int64_t begin = next_piece_.fetch_add(job_grain_, std::memory_order_relaxed);
      if (begin >= job_n_) break;
      (*job_fn_)(begin, std::min(job_n_, begin + job_grain_));
    }
  } else if (index < job_chunks_) {
    int64_t begin;
    int64_t end;
    ChunkBounds(job_n_, job_chunks_, index, &begin, &end);
    (*job_fn_)(begin, end);
  }
  tls_running_pool = outer;
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  KV_CHECK(tls_running_pool != this) << "nested ParallelFor on the same ThreadPool";
  if (workers_.empty() || n == 1) {
    const ThreadPool* outer = tls_running_pool;
    tls_running_pool = this;
    fn(0, n);
    tls_running_pool = outer;
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  job_fn_ = &fn;
  job_n_ = n;
  job_chunks_ = std::min<int64_t>(n, num_threads());
  job_grain_ = 0;
  RunJob();
}

void ThreadPool::ParallelForDynamic(int64_t n, int64_t grain,
                                    const std::function<void(int64_t, int64_t)>& fn) {
  KV_CHECK(grain >= 1) << "grain=" << grain;
  if (n <= 0) return;
  KV_CHECK(tls_running_pool != this) << "nested ParallelFor on the same ThreadPool";
  if (workers_.empty() || n <= grain) {  // One piece, or no one to share with.
    const ThreadPool* outer = tls_running_pool;
    tls_running_pool = this;
    for (int64_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
    tls_running_pool = outer;
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  job_fn_ = &fn;
  job_n_ = n;
  job_chunks_ = 0;
  job_grain_ = grain;
  // Relaxed: the generation bump below (release) publishes it to the workers.
  next_piece_.store(0, std::memory_order_relaxed);
  RunJob();
}

void ThreadPool::RunJob() {
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_cv_.notify_all();

  RunChunk(0);

  const auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, all_done);
  }
  job_fn_ = nullptr;
}

void ThreadPool::WorkerLoop(int worker_index) {
  uint64_t seen = 0;
  for (;;) {
    const auto has_work = [this, &seen] {
      return generation_.load(std::memory_order_acquire) != seen ||
             stop_.load(std::memory_order_acquire);
    };
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_cv_.wait(lock, has_work);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);

    RunChunk(worker_index + 1);

    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace kvengine
