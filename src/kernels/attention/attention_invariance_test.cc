// Bit invariance of the decode-attention kernels: batch composition, thread count, paged vs
// contiguous layout, the prefetch level and the KV heads per work item change no output bit on
// any compiled target; the plan's heads per item; ItemRowWalker against per-position address
// arithmetic; the default prefetch level. (Accuracy against the references:
// attention_kernel_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_kernel_test_util.h"
#include "kernels/attention/attention_test_util.h"
#include "kernels/attention/paged_attention.h"

namespace kvengine {
namespace {

using namespace attention_test;  // NOLINT(build/namespaces): the shared test fixtures.

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  }
  return true;
}

// Several sequences' decode and prefill-like queries in one batch: 1 thread, 2 threads and each
// query alone give the same bits; so do the paged and the contiguous layout of the same rows.
TEST(AttentionKernelTest, BatchInvarianceAndLayoutInvariance) {
  const int n_heads = 8, n_kv = 2, d = 64;
  for (KvDtype dtype : {KvDtype::kF16, KvDtype::kInt8}) {
    SCOPED_TRACE(std::string(KvDtypeName(dtype)));
    KvShape s;
    s.k_dtype = s.v_dtype = dtype;
    s.num_kv_heads = n_kv;
    s.head_dim_k = s.head_dim_v = d;
    s.block_size = 16;
    const int64_t tokens = 4500;
    const OwnedKv paged = MakeKv(s, tokens, 3);
    s.block_size = 8192;
    const OwnedKv contiguous = MakeKv(s, tokens, 3);  // Same seed: same rows, one block.
    ASSERT_EQ(paged.k, contiguous.k);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const std::vector<int64_t> positions = {4499, 17, 2047, 2048, 4000, 0, 4499, 1000};
    const size_t qn = size_t(n_heads) * d;
    std::vector<float> q(positions.size() * qn);
    for (float& x : q) x = nd(rng);
    const auto run = [&](const OwnedKv& kv, ThreadPool* pool, std::vector<size_t> which) {
      std::vector<float> out(positions.size() * qn, NAN);
      std::vector<AttentionQuery> queries;
      for (size_t i : which) {
        queries.push_back({kv.table, q.data() + i * qn, positions[i], out.data() + i * qn});
      }
      PagedAttentionBatch(kv.view, queries, n_heads, 0.125f, pool);
      return out;
    };
    std::vector<size_t> all(positions.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    ThreadPool two(2);
    const std::vector<float> one_thread = run(paged, nullptr, all);
    EXPECT_TRUE(SameBits(one_thread, run(paged, &two, all)));
    std::vector<float> alone(one_thread.size());
    for (size_t i : all) {
      const std::vector<float> o = run(paged, &two, {i});
      std::copy(o.begin() + long(i * qn), o.begin() + long((i + 1) * qn),
                alone.begin() + long(i * qn));
    }
    EXPECT_TRUE(SameBits(one_thread, alone));
    EXPECT_TRUE(SameBits(one_thread, run(contiguous, &two, all)));
    // PagedAttention (one token) goes the same way.
    std::vector<float> single(qn);
    PagedAttention(paged.view, paged.table, q.data(), n_heads, positions[0], 0.125f, single.data());
    EXPECT_TRUE(
        SameBits(single, std::vector<float>(one_thread.begin(), one_thread.begin() + long(qn))));
  }
}

// N(0, 1) queries for every position RunBatch runs of `c`.
std::vector<float> RandomQueries(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(PositionsOf(c).size() * size_t(c.n_heads) * size_t(c.head_dim));
  for (float& x : q) x = nd(rng);
  return q;
}

// Prefetching into L1 or L2 changes when rows arrive, never what is computed: every target gives
// the same bits with both levels (f16 and int8 paged over several partitions and a window).
TEST(AttentionKernelTest, PrefetchLevelChangesNoBits) {
  for (const Config& c : {Config{KvDtype::kF16, 8, 2, 128, 16, 5000},
                          Config{KvDtype::kInt8, 8, 2, 128, 16, 5000, 3000, 4},
                          Config{KvDtype::kInt4, 4, 1, 64, 32, 700}}) {
    SCOPED_TRACE(Describe(c));
    const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 13);
    const std::vector<float> q = RandomQueries(c, 7);
    for (AttentionKernels k : AvailableAttentionKernels()) {
      SCOPED_TRACE(k.target_name);
      k.prefetch = KvPrefetchLevel::kL1;
      const std::vector<float> l1 = RunBatch(k, kv, c, q, nullptr);
      k.prefetch = KvPrefetchLevel::kL2;
      EXPECT_TRUE(SameBits(l1, RunBatch(k, kv, c, q, nullptr)));
    }
  }
}

// How many KV heads a work item takes changes which thread reads which rows, never what is
// computed: every target gives the same bits with one head per item, ragged runs of heads (3 of
// 8: 3 + 3 + 2), all of them and the plan's own choice, with 1 and 2 threads (f16 and int8 over
// several partitions and a window, int4 through the fused decoder, a ragged head dim through the
// tiles), and the reference kernel agrees with itself the same way.
TEST(AttentionKernelTest, KvHeadsPerItemChangeNoBits) {
  ThreadPool two(2);
  for (const Config& c :
       {Config{KvDtype::kF16, 32, 8, 64, 16, 5000},
        Config{KvDtype::kInt8, 32, 8, 128, 16, 4500, 3000, 4},
        Config{KvDtype::kInt4, 8, 4, 64, 32, 700}, Config{KvDtype::kBF16, 12, 3, 40, 16, 300}}) {
    SCOPED_TRACE(Describe(c));
    const OwnedKv kv = MakeKv(ShapeOf(c), c.tokens, 17);
    const std::vector<float> q = RandomQueries(c, 3);
    std::vector<AttentionKernels> kernels = AvailableAttentionKernels();
    kernels.push_back(ReferenceAttentionKernels());
    for (AttentionKernels k : kernels) {
      SCOPED_TRACE(k.target_name);
      k.kv_heads_per_item = 1;
      const std::vector<float> one = RunBatch(k, kv, c, q, nullptr);
      for (int heads : {0, 2, 3, c.n_kv}) {
        SCOPED_TRACE(heads);
        k.kv_heads_per_item = heads;
        EXPECT_TRUE(SameBits(one, RunBatch(k, kv, c, q, nullptr)));
        EXPECT_TRUE(SameBits(one, RunBatch(k, kv, c, q, &two)));
      }
    }
  }
}

// The plan's choice (paged_attention.cc): every KV head in one item where a block's per-head
// runs are short, split for threads when the batch has few partitions; one head per item for
// long runs (the contiguous layout) or where asked.
TEST(AttentionKernelTest, PlansKvHeadsPerItem) {
  KvShape s;
  s.k_dtype = s.v_dtype = KvDtype::kF16;
  s.num_kv_heads = 8;
  s.head_dim_k = s.head_dim_v = 128;
  s.block_size = 16;  // Runs of 4 KiB.
  const KvLayerView paged = attention_test::LayoutOf(s);
  s.block_size = 4096;  // Runs of 1 MiB.
  const KvLayerView contiguous = attention_test::LayoutOf(s);
  const std::vector<int32_t> table(4096, 0);
  const auto query = [&](int64_t pos) { return AttentionQuery{table, nullptr, pos, nullptr}; };
  const std::vector<AttentionQuery> long_one = {query(32767)};  // 16 partitions.
  const std::vector<AttentionQuery> short_one = {query(100)};   // 1 partition.
  ThreadPool two(2);
  AttentionKernels k = DefaultAttentionKernels();
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, nullptr), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, short_one, nullptr), 8);
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, short_one, &two), 1);  // 8 items for 2 threads.
  EXPECT_EQ(PlannedKvHeadsPerItem(k, contiguous, long_one, nullptr), 1);
  k.kv_heads_per_item = 3;
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 3);
  k.kv_heads_per_item = 100;
  EXPECT_EQ(PlannedKvHeadsPerItem(k, paged, long_one, &two), 8);
}

// ItemRowWalker::Next in chunks of any size yields the rows (and run starts) that per-position
// address arithmetic gives: K and V data and scales of the item's first KV head, blocks of 1 / 5
// / 16 rows, ranges that start and end mid-block, two ranges. (GCC 12.2 -O3 once miscompiled the
// walk's four running pointer sums into K = V: docs/notes/attention-kernel.md, "Where the in-cache
// time goes on AVX2".)
TEST(AttentionKernelTest, RowWalkerYieldsEachPositionsRows) {
  for (const KvDtype dtype : {KvDtype::kF16, KvDtype::kInt8}) {
    for (const int block_size : {1, 5, 16}) {
      KvShape shape;
      shape.k_dtype = shape.v_dtype = dtype;
      shape.num_kv_heads = 3;
      shape.block_size = block_size;
      const OwnedKv kv = MakeKv(shape, 300, 5);
      const KvLayerView& v = kv.view;
      for (const auto& [b0, e0, b1, e1] :
           {std::array<int64_t, 4>{0, 0, 0, 130}, {0, 3, 171, 290}, {37, 101, 0, 0}}) {
        for (const int step : {1, 7, 64}) {
          AttentionItem item;
          item.block_table = kv.table;
          item.kv_head = 2;
          item.begin[0] = b0;
          item.end[0] = e0;
          item.begin[1] = b1;
          item.end[1] = e1;
          std::vector<int64_t> positions;
          for (int64_t t = b0; t < e0; ++t) positions.push_back(t);
          for (int64_t t = b1; t < e1; ++t) positions.push_back(t);
          ItemRowWalker walk(v, item);
          size_t i = 0;
          while (walk.remaining() > 0) {
            const int n = int(std::min<int64_t>(step, walk.remaining()));
            std::vector<KvRowRefs> rows(static_cast<size_t>(n));
            uint64_t starts = 0;
            walk.Next(n, rows.data(), &starts);
            for (int j = 0; j < n; ++j, ++i) {
              const int64_t t = positions[i];
              const uint8_t* block =
                  v.pool + size_t(kv.table[size_t(t / block_size)]) * v.bytes_per_block;
              const size_t row = 2 * size_t(block_size) + size_t(t % block_size);
              const std::string where = "t " + std::to_string(t) + " step " + std::to_string(step) +
                                        " block " + std::to_string(block_size);
              EXPECT_EQ(rows[size_t(j)].k_data, block + v.k_data + row * v.k_row_bytes) << where;
              EXPECT_EQ(rows[size_t(j)].k_scale, block + v.k_scale + row * v.k_scale_bytes)
                  << where;
              EXPECT_EQ(rows[size_t(j)].v_data, block + v.v_data + row * v.v_row_bytes) << where;
              EXPECT_EQ(rows[size_t(j)].v_scale, block + v.v_scale + row * v.v_scale_bytes)
                  << where;
              // A run starts at the chunk's first row and wherever the position does not follow
              // the previous one in its block.
              const bool start = j == 0 || t != positions[i - 1] + 1 ||
                                 t / block_size != positions[i - 1] / block_size;
              EXPECT_EQ(((starts >> j) & 1) != 0, start) << where;
            }
          }
          EXPECT_EQ(i, positions.size());
        }
      }
    }
  }
}

// The default level follows the L1 data cache's size (attention_kernel.h).
TEST(AttentionKernelTest, DefaultPrefetchLevelFollowsL1Size) {
  const long l1 = L1DataCacheBytes();
  const KvPrefetchLevel want =
      l1 == 0 || l1 >= kL1PrefetchMinBytes ? KvPrefetchLevel::kL1 : KvPrefetchLevel::kL2;
  EXPECT_EQ(DefaultKvPrefetchLevel(), want) << "L1d " << l1 << " bytes";
  EXPECT_EQ(DefaultAttentionKernels().prefetch, want);
  EXPECT_STREQ(KvPrefetchLevelName(KvPrefetchLevel::kL1), "l1");
  EXPECT_STREQ(KvPrefetchLevelName(KvPrefetchLevel::kL2), "l2");
  std::cout << "L1d " << l1 << " bytes: prefetch into " << KvPrefetchLevelName(want) << "\n";
}

}  // namespace
}  // namespace kvengine
