#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace kvengine {
namespace {

// Every index of [0, n) is visited exactly once, by contiguous chunks.
void ExpectCoversOnce(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
    ASSERT_LT(begin, end);
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(begin, end);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "i=" << i;
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), std::min<int64_t>(n, pool.num_threads()));
}

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 2, 3, 7, 8, 9, 100, 1001}) {
      SCOPED_TRACE(testing::Message() << "threads=" << threads << " n=" << n);
      ExpectCoversOnce(pool, n);
    }
  }
}

TEST(ThreadPoolTest, ZeroOrNegativeRangeCallsNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.ParallelFor(0, [&](int64_t, int64_t) { ++calls; });
  pool.ParallelFor(-5, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPoolTest, SingleThreadRunsInlineOnCaller) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  pool.ParallelFor(50, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 50);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, CallerRunsFirstChunkAndWorkersAreReused) {
  ThreadPool pool(3);
  const std::thread::id caller = std::this_thread::get_id();
  std::set<std::thread::id> first_ids;
  for (int round = 0; round < 200; ++round) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    pool.ParallelFor(3, [&](int64_t begin, int64_t) {
      if (begin == 0) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
      }
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids.size(), 3u);
    if (round == 0) first_ids = ids;
    EXPECT_EQ(ids, first_ids) << "a ParallelFor ran on a thread outside the fixed pool";
  }
}

TEST(ThreadPoolTest, ChunkBoundsAreBalancedAndContiguous) {
  for (int64_t n : {1, 5, 16, 17, 1000003}) {
    for (int64_t k : {1, 2, 3, 7}) {
      if (k > n) continue;
      int64_t expect_begin = 0;
      for (int64_t i = 0; i < k; ++i) {
        int64_t begin;
        int64_t end;
        ThreadPool::ChunkBounds(n, k, i, &begin, &end);
        EXPECT_EQ(begin, expect_begin);
        EXPECT_GE(end - begin, n / k);
        EXPECT_LE(end - begin, n / k + 1);
        expect_begin = end;
      }
      EXPECT_EQ(expect_begin, n);
    }
  }
}

TEST(ThreadPoolTest, ResultsVisibleAfterReturnAcrossManyCalls) {
  ThreadPool pool(4);
  std::vector<int64_t> data(4096);
  for (int round = 1; round <= 300; ++round) {
    pool.ParallelFor(static_cast<int64_t>(data.size()), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[static_cast<size_t>(i)] += i;
    });
  }
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], 300 * static_cast<int64_t>(i));
}

TEST(ThreadPoolTest, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 100; ++round) {
        pool.ParallelFor(10, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 100 * 10);
}

// ParallelForDynamic: every index once, in the pieces [k * grain, min(n, (k + 1) * grain)).
TEST(ThreadPoolTest, DynamicCoversEveryIndexOnceInPieces) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 16, 100, 1001}) {
      for (int64_t grain : {1, 3, 16, 5000}) {
        SCOPED_TRACE(testing::Message()
                     << "threads=" << threads << " n=" << n << " grain=" << grain);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int64_t> calls{0};
        pool.ParallelForDynamic(n, grain, [&](int64_t begin, int64_t end) {
          EXPECT_EQ(begin % grain, 0);
          EXPECT_EQ(end, std::min(n, begin + grain));
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          calls.fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
        EXPECT_EQ(calls.load(), (n + grain - 1) / grain);
      }
    }
  }
}

// A thread held up in one piece leaves the rest to the others: the piece that starts at 0 waits
// until every other piece is done, which a static split (whose first chunk would hold more
// pieces) could never see.
TEST(ThreadPoolTest, DynamicPiecesGoToTheFreeThread) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    const int64_t n = 64;
    std::atomic<int64_t> others_done{0};
    bool waited_out = true;
    pool.ParallelForDynamic(n, 1, [&](int64_t begin, int64_t) {
      if (begin != 0) {
        others_done.fetch_add(1);
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (others_done.load() < n - 1) {
        if (std::chrono::steady_clock::now() > deadline) {
          waited_out = false;
          break;
        }
        std::this_thread::yield();
      }
    });
    ASSERT_TRUE(waited_out) << "round " << round << ": the other pieces did not run meanwhile";
  }
}

TEST(ThreadPoolTest, DynamicAndStaticCallsInterleave) {
  ThreadPool pool(3);
  std::vector<int64_t> data(1000);
  for (int round = 1; round <= 100; ++round) {
    const auto add = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[static_cast<size_t>(i)] += i;
    };
    if (round % 2 == 0) {
      pool.ParallelFor(static_cast<int64_t>(data.size()), add);
    } else {
      pool.ParallelForDynamic(static_cast<int64_t>(data.size()), 37, add);
    }
  }
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], 100 * static_cast<int64_t>(i));
}

TEST(ThreadPoolTest, DefaultThreadCountIsPositive) {
  EXPECT_GE(ThreadPool::DefaultThreadCount(), 1);
}

TEST(ThreadPoolDeathTest, NestedCallOnSamePoolChecks) {
  EXPECT_DEATH(
      {
        ThreadPool pool(1);
        pool.ParallelFor(1,
                         [&](int64_t, int64_t) { pool.ParallelFor(1, [](int64_t, int64_t) {}); });
      },
      "nested ParallelFor");
}

TEST(ThreadPoolDeathTest, DynamicNestedCallAndZeroGrainCheck) {
  EXPECT_DEATH(
      {
        ThreadPool pool(2);
        pool.ParallelForDynamic(8, 1, [&](int64_t, int64_t) {
          pool.ParallelForDynamic(1, 1, [](int64_t, int64_t) {});
        });
      },
      "nested ParallelFor");
  EXPECT_DEATH(
      {
        ThreadPool pool(2);
        pool.ParallelForDynamic(8, 0, [](int64_t, int64_t) {});
      },
      "grain=0");
}

}  // namespace
}  // namespace kvengine
