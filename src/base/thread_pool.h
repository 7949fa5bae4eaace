// ThreadPool: a fixed set of worker threads, created once, that run a ParallelFor over an index
// range together with the calling thread. Kernels use it to split work (a matmul by output rows)
// without creating a thread per call.
//
// Ownership and threading rules:
//   * The owner (typically the engine loop, which owns the model) creates the pool once and keeps
//     it for the model's lifetime; the destructor joins every worker. Not copyable or movable.
//   * ParallelFor may be called from any thread that is not one of this pool's workers; calls from
//     several threads are serialized (one job runs at a time). Calling ParallelFor from inside a
//     ParallelFor body on the same pool is a programming error (KV_CHECK), as it would deadlock.
//   * The body `fn` runs concurrently on up to num_threads() threads, each on its own disjoint
//     chunk [begin, end); it must not throw (the project builds without exceptions in mind) and
//     must write only to memory its chunk owns.
//   * ParallelFor returns after every chunk has finished; everything the chunks wrote is then
//     visible to the caller (the completion count is an acquire/release handshake).
//
// Chunking (ParallelFor): [0, n) is split into min(n, num_threads()) contiguous chunks whose sizes
// differ by at most one, in index order; chunk 0 runs on the calling thread and chunk i on worker i
// - 1. The split depends only on n and num_threads(), never on timing, so results that depend on
// the split (none should: kernels are written to be split-invariant) are still reproducible.
//
// Waiting: workers and the caller spin briefly (kSpinIterations pause instructions, tens of
// microseconds) before sleeping on a condition variable, because a decode step issues hundreds of
// short ParallelFor calls and a futex wake-up costs several microseconds each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvengine {

class ThreadPool {
 public:
  // A pool of `num_threads` threads in all: the caller plus num_threads - 1 workers started now.
  // num_threads >= 1; a pool of 1 starts no thread and runs every ParallelFor inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that run ParallelFor chunks, the caller included.
  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) for contiguous chunks covering [0, n) exactly once (see the chunking rule
  // above) and blocks until all have returned. n <= 0 calls nothing.
  void ParallelFor(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

  // Calls fn(begin, end) once for each piece [k * grain, min(n, (k + 1) * grain)) of [0, n) and
  // blocks until all have returned. The pieces are claimed in index order by whichever thread is
  // free, the caller included: a thread that starts late or runs slow takes fewer pieces, and
  // none waits while work is left. Which thread runs which piece depends on timing, so fn's
  // results must not depend on it (the kernels' split invariance). grain >= 1; n <= 0 calls
  // nothing.
  void ParallelForDynamic(int64_t n, int64_t grain,
                          const std::function<void(int64_t begin, int64_t end)>& fn);

  // The machine's hardware thread count (at least 1): a default for --threads.
  static int DefaultThreadCount();

  // Chunk `index` of `num_chunks` over [0, n): [*begin, *end). Exposed for tests.
  static void ChunkBounds(int64_t n, int64_t num_chunks, int64_t index, int64_t* begin,
                          int64_t* end);

 private:
  void WorkerLoop(int worker_index);
  // Runs chunk `index` of the current job when the job has that many chunks; for a dynamic job,
  // claims and runs pieces until none is left.
  void RunChunk(int64_t index);
  // Publishes the job set in job_* to the workers, runs the caller's share and waits for them.
  void RunJob();

  std::vector<std::thread> workers_;

  // Serializes ParallelFor callers: the job fields below belong to the caller holding it.
  std::mutex call_mu_;
  // The current job. Written by the caller before it bumps generation_ (release); read by workers
  // after they observe the new generation (acquire); not changed again until every worker has
  // decremented pending_.
  const std::function<void(int64_t, int64_t)>* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunks_ = 0;
  // Dynamic jobs (ParallelForDynamic): piece size, and the next piece's first index.
  int64_t job_grain_ = 0;  // 0: a static job.
  std::atomic<int64_t> next_piece_{0};

  // Incremented once per job; workers run each generation exactly once.
  std::atomic<uint64_t> generation_{0};
  // Workers that have not yet finished the current generation (every worker acknowledges every
  // job, with or without a chunk, so the job fields are never rewritten under a late reader).
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};

  // Sleeping: workers wait on wake_cv_ for a new generation or stop_; the caller waits on done_cv_
  // for pending_ == 0. Waiters test their predicate while holding mu_ and whoever changes it takes
  // mu_ before notifying, so no wake-up is lost.
  std::mutex mu_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
};

}  // namespace kvengine
