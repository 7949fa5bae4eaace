#include "base/sha256.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(HexOf(Sha256Of("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexOf(Sha256Of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, IncrementalEqualsOneShotAndResets) {
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
  h.Update("abc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
}

}  // namespace
}  // namespace kvengine
