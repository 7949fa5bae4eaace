#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

namespace kvengine {
namespace {

TEST(HugePageRegionTest, AlignedZeroedWritable) {
  for (size_t bytes : {size_t{1}, size_t{4096}, kHugePageBytes + 123, 3 * kHugePageBytes}) {
    Result<HugePageRegion> r = HugePageRegion::Allocate(bytes);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->data()) % kHugePageBytes, 0u);
    for (size_t i = 0; i < bytes; i += 997) ASSERT_EQ(r->data()[i], 0) << i;
    EXPECT_EQ(r->data()[bytes - 1], 0);
    std::memset(r->data(), 0xAB, bytes);
    EXPECT_EQ(r->data()[bytes - 1], 0xAB);
  }
}

TEST(HugePageRegionTest, MoveTransfersOwnership) {
  HugePageRegion a = std::move(HugePageRegion::Allocate(8192)).value();
  uint8_t* p = a.data();
  p[5] = 7;
  HugePageRegion b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[5], 7);
  b = HugePageRegion();
  EXPECT_EQ(b.data(), nullptr);
}

TEST(HugePageRegionTest, RejectsZeroAndHugeSizes) {
  EXPECT_FALSE(HugePageRegion::Allocate(0).ok());
  Result<HugePageRegion> r = HugePageRegion::Allocate(SIZE_MAX - 5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too large"), std::string::npos);
}

}  // namespace
}  // namespace kvengine
