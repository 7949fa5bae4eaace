#include "kvengine/status.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  KV_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = NotFound("no such preset 'x'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "not found: no such preset 'x'");
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd");
}

TEST(StatusDeathTest, CheckAbortsWithMessage) {
  EXPECT_DEATH(KV_CHECK(1 + 1 == 3) << "arith", "check failed: 1 \\+ 1 == 3 arith");
}

}  // namespace
}  // namespace kvengine
