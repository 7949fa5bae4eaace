#include "bench/kv/contiguous_allocator.h"

#include <gtest/gtest.h>

#include <limits>

#include "kv/block_layout.h"
#include "bench/kv/workload_test_util.h"

namespace kvengine {
namespace {

using workload_testing::FullGroup;

TEST(ContiguousAllocatorTest, RegionsForUsesThePagedPoolsBytesPerToken) {
  // llama-3-8b: 32 layers x 8 KV heads x 128 dims, f16: 128 KiB per token, 512 MiB per 4096.
  const std::vector<KvGroupSpec> groups = {FullGroup(32, 8, 128, KvDtype::kF16)};
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, uint64_t{4} << 30, 4096), 8);
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, (uint64_t{4} << 30) - 1, 4096), 7);
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, uint64_t{512} << 20, 4096), 1);
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, uint64_t{511} << 20, 4096), 0);
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, uint64_t{4} << 30, 2048), 16);
  // No overflow at the extremes; the count saturates below INT32_MAX.
  EXPECT_GT(ContiguousAllocator::RegionsFor(groups, 256, std::numeric_limits<uint64_t>::max(), 1),
            0);
  EXPECT_EQ(ContiguousAllocator::RegionsFor({}, 16, uint64_t{4} << 30, 4096), 0);
}

TEST(ContiguousAllocatorTest, RegionsForSumsGroupsAndBlockPadding) {
  const std::vector<KvGroupSpec> groups = {FullGroup(2, 2, 8, KvDtype::kF16),
                                           FullGroup(2, 2, 8, KvDtype::kInt8, 2)};
  uint64_t bpb = 0;
  for (const KvGroupSpec& g : groups) bpb += BlockLayout(g, 16).bytes_per_block();
  // Exactly 3 regions of 64 tokens = 12 blocks' worth of every group.
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, 12 * bpb, 64), 3);
  EXPECT_EQ(ContiguousAllocator::RegionsFor(groups, 16, 12 * bpb - 1, 64), 2);
}

TEST(ContiguousAllocatorTest, ReservesGrowsAndFrees) {
  ContiguousAllocator a(3, 100);
  EXPECT_EQ(a.capacity_slots(), 300);
  const int32_t r0 = a.Reserve();
  const int32_t r1 = a.Reserve();
  EXPECT_EQ(r0, 0);
  EXPECT_EQ(r1, 1);
  EXPECT_EQ(a.slot_offset(r1), 100);
  EXPECT_EQ(a.reserved_slots(), 200);
  EXPECT_EQ(a.tokens_held(), 0);
  EXPECT_TRUE(a.Grow(r0, 60));
  EXPECT_TRUE(a.Grow(r0, 40));
  EXPECT_FALSE(a.Grow(r0, 1));  // Full: nothing changes.
  EXPECT_EQ(a.fill(r0), 100);
  EXPECT_TRUE(a.Grow(r1, 5));
  EXPECT_EQ(a.tokens_held(), 105);
  const int32_t r2 = a.Reserve();
  EXPECT_EQ(r2, 2);
  EXPECT_EQ(a.Reserve(), -1);  // All regions in use.
  a.Free(r0);
  EXPECT_EQ(a.tokens_held(), 5);
  EXPECT_EQ(a.num_free(), 1);
  EXPECT_EQ(a.Reserve(), 0);  // Reused, empty.
  EXPECT_EQ(a.fill(0), 0);
  a.Free(r2);
  a.Free(r1);
  a.Free(0);
  EXPECT_EQ(a.num_free(), 3);
  EXPECT_EQ(a.tokens_held(), 0);
  EXPECT_EQ(a.reserved_slots(), 0);
  EXPECT_EQ(a.Reserve(), 0);  // Lowest free id first, whatever the free order.
}

}  // namespace
}  // namespace kvengine
