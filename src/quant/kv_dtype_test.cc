#include "quant/kv_dtype.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(KvDtypeTest, NamesRoundTrip) {
  for (KvDtype dtype : kAllKvDtypes) {
    SCOPED_TRACE(std::string(KvDtypeName(dtype)));
    Result<KvDtype> parsed = ParseKvDtype(KvDtypeName(dtype));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, dtype);
  }
  EXPECT_EQ(KvDtypeName(KvDtype::kFp8E4M3), "fp8_e4m3");
  EXPECT_EQ(KvDtypeName(KvDtype::kInt4), "int4");
}

TEST(KvDtypeTest, AliasesAndCase) {
  const std::pair<const char*, KvDtype> cases[] = {
      {"fp32", KvDtype::kF32},         {"F32", KvDtype::kF32},
      {"fp16", KvDtype::kF16},         {"float16", KvDtype::kF16},
      {"Half", KvDtype::kF16},         {"BF16", KvDtype::kBF16},
      {"fp8", KvDtype::kFp8E4M3},      {"FP8_E4M3FN", KvDtype::kFp8E4M3},
      {"e4m3", KvDtype::kFp8E4M3},     {"e5m2", KvDtype::kFp8E5M2},
      {"fp8_e5m2", KvDtype::kFp8E5M2}, {"q8", KvDtype::kInt8},
      {"Q8_0", KvDtype::kInt8},        {"q4", KvDtype::kInt4},
      {"q4_0", KvDtype::kInt4},        {"INT4", KvDtype::kInt4},
  };
  for (const auto& [name, dtype] : cases) {
    Result<KvDtype> parsed = ParseKvDtype(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, dtype) << name;
  }
}

TEST(KvDtypeTest, RejectsUnknownNames) {
  for (const char* name : {"", "int3", "f 16", "fp8_e3m4", "int8 ", "q4_1"}) {
    Result<KvDtype> parsed = ParseKvDtype(name);
    ASSERT_FALSE(parsed.ok()) << "'" << name << "'";
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  }
  const std::string message = ParseKvDtype("int3").status().message();
  EXPECT_NE(message.find("'int3'"), std::string::npos) << message;
  EXPECT_NE(message.find("fp8_e5m2"), std::string::npos) << message;
}

TEST(KvDtypeTest, Int4GroupSize) {
  const std::pair<int, int> cases[] = {{1, 1},   {2, 2},   {3, 3},    {7, 7},    {8, 8},   {31, 31},
                                       {32, 32}, {33, 11}, {34, 17},  {37, 1},   {64, 32}, {74, 2},
                                       {80, 20}, {96, 32}, {100, 25}, {128, 32}, {576, 32}};
  for (const auto& [n, g] : cases) EXPECT_EQ(Int4GroupSize(n), g) << "n=" << n;
}

void ExpectFormat(KvDtype dtype, int n, size_t data, size_t scale, int group) {
  const RowFormat f = RowFormatOf(dtype, n);
  EXPECT_EQ(f.data_bytes, data) << KvDtypeName(dtype) << " n=" << n;
  EXPECT_EQ(f.scale_bytes, scale) << KvDtypeName(dtype) << " n=" << n;
  EXPECT_EQ(f.group_size, group) << KvDtypeName(dtype) << " n=" << n;
}

TEST(KvDtypeTest, RowFormats) {
  ExpectFormat(KvDtype::kF32, 128, 512, 0, 0);
  ExpectFormat(KvDtype::kF16, 128, 256, 0, 0);
  ExpectFormat(KvDtype::kBF16, 128, 256, 0, 0);
  ExpectFormat(KvDtype::kFp8E4M3, 128, 128, 2, 128);
  ExpectFormat(KvDtype::kFp8E5M2, 128, 128, 2, 128);
  ExpectFormat(KvDtype::kInt8, 128, 128, 2, 128);
  ExpectFormat(KvDtype::kInt4, 128, 64, 16, 32);
  // The test model's head_dim, odd lengths, MLA's 576, and non-power-of-two heads.
  ExpectFormat(KvDtype::kF32, 8, 32, 0, 0);
  ExpectFormat(KvDtype::kInt8, 8, 8, 2, 8);
  ExpectFormat(KvDtype::kInt4, 8, 4, 4, 8);
  ExpectFormat(KvDtype::kInt4, 1, 1, 4, 1);
  ExpectFormat(KvDtype::kInt4, 7, 4, 4, 7);
  ExpectFormat(KvDtype::kInt4, 31, 16, 4, 31);
  ExpectFormat(KvDtype::kInt4, 80, 40, 16, 20);
  ExpectFormat(KvDtype::kInt4, 96, 48, 12, 32);
  ExpectFormat(KvDtype::kInt4, 576, 288, 72, 32);
  ExpectFormat(KvDtype::kFp8E4M3, 576, 576, 2, 576);
}

}  // namespace
}  // namespace kvengine
