// The generated corrupt-file suite: the base file (gguf_test_util.h) with one field broken at a
// time, every truncation, and every header byte flipped. Each broken file must yield a non-OK
// Status with a message naming the problem, and nothing may crash (run under ASan/UBSan too).
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_test_util.h"

namespace kvengine {
namespace {

using gguf_test::BaseRawFile;
using gguf_test::Encode;
using gguf_test::EncodeString;
using gguf_test::KvByKey;
using gguf_test::RawFile;
using gguf_test::Serialize;
using gguf_test::TensorByName;
using ::testing::HasSubstr;

constexpr uint32_t kU32 = static_cast<uint32_t>(GgufValueType::kU32);

// Reads everything a caller could: every value (arrays element by element, recursively) and
// every tensor byte's first and last element. Must not crash on any file that opened.
void TouchEverything(const GgufFile& f) {
  std::function<void(const GgufValue&)> touch = [&](const GgufValue& v) {
    (void)v.ToString();
    (void)v.AsInt();
    (void)v.AsFloat();
    Result<std::vector<GgufValue>> elements = v.Elements();
    if (elements.ok()) {
      for (const GgufValue& e : *elements) touch(e);
    }
  };
  for (const GgufKv& kv : f.metadata()) {
    touch(kv.value);
    EXPECT_TRUE(f.Has(kv.key));
  }
  for (const GgufTensor& t : f.tensors()) {
    EXPECT_EQ(f.FindTensor(t.name), &t);
    if (!t.data.empty()) (void)(t.data.front() + t.data.back());
  }
}

struct CorruptCase {
  const char* name;
  std::function<void(RawFile&)> mutate;
  const char* expected;  // A substring of the error message.
};

// The file header: magic, version, counts.
std::vector<CorruptCase> HeaderCases() {
  return {
      {"bad_magic", [](RawFile& f) { f.magic = 0x46475547; }, "not a GGUF file: magic is 'GUGF'"},
      {"version_1", [](RawFile& f) { f.version = 1; }, "unsupported GGUF version 1"},
      {"version_4", [](RawFile& f) { f.version = 4; }, "unsupported GGUF version 4"},
      {"big_endian", [](RawFile& f) { f.version = 0x03000000; }, "big-endian"},
      {"huge_tensor_count", [](RawFile& f) { f.tensor_count = uint64_t{1} << 60; },
       "tensor count 1152921504606846976 cannot fit"},
      {"huge_kv_count", [](RawFile& f) { f.kv_count = uint64_t{1} << 60; },
       "metadata key count 1152921504606846976 cannot fit"},
      {"max_counts", [](RawFile& f) { f.kv_count = f.tensor_count = UINT64_MAX; }, "cannot fit"},
      {"kv_count_one_more", [](RawFile& f) { f.kv_count = f.kvs.size() + 1; },
       "tensor 0 name at byte 413: string length"},
      {"tensor_count_one_more", [](RawFile& f) { f.tensor_count = f.tensors.size() + 1; },
       "tensor 3"},
  };
}

// Metadata keys and values.
std::vector<CorruptCase> MetadataCases() {
  auto strings_array = [](uint64_t count) {
    std::vector<uint8_t> v;
    GgufAppendArrayHeader(&v, GgufValueType::kString, count);
    GgufAppendString(&v, "a");
    return v;
  };
  return {
      {"string_past_eof",
       [](RawFile& f) {
         std::vector<uint8_t> v = Encode<uint64_t>(99999999);
         GgufAppendBytes(&v, EncodeString("x"));
         KvByKey(f, "general.name").value = v;
       },
       "metadata key 2 'general.name' at byte 102: string at byte 126: string length 99999999 "
       "exceeds the"},
      {"bad_value_type", [](RawFile& f) { KvByKey(f, "base.u32").type = 13; },
       "metadata key 3 'base.u32' at byte 138: unknown metadata value type id 13"},
      {"bad_array_element_type", [](RawFile& f) { KvByKey(f, "base.ids").value[0] = 99; },
       "unknown metadata value type id 99"},
      {"huge_u32_array",
       [](RawFile& f) {
         KvByKey(f, "base.ids").value = gguf_test::EncodeU32Array({1}, 1ull << 62);
       },
       "4611686018427387904 elements of type u32 need at least 4 bytes each"},
      {"huge_string_array",
       [=](RawFile& f) { KvByKey(f, "base.tokens").value = strings_array(1ull << 61); },
       "elements of type string need at least 8 bytes each"},
      {"string_array_element_past_eof",
       [=](RawFile& f) {
         std::vector<uint8_t> v;
         GgufAppendArrayHeader(&v, GgufValueType::kString, 2);
         GgufAppendString(&v, "a");
         GgufAppendScalar<uint64_t>(&v, 1ull << 40);
         KvByKey(f, "base.tokens").value = v;
       },
       "array element 1: string at byte"},
      {"array_nested_too_deep",
       [](RawFile& f) { KvByKey(f, "base.nested").value = gguf_test::EncodeNestedArray(5); },
       "nested 5 deep, the limit is 4"},
      {"bool_not_0_or_1", [](RawFile& f) { KvByKey(f, "base.bool").value = {2}; }, "bool at byte"},
      {"duplicate_key", [](RawFile& f) { KvByKey(f, "base.u32").key = "general.name"; },
       "metadata key 3 'general.name' at byte 138: duplicate key (first defined as metadata key "
       "2)"},
      {"key_too_long", [](RawFile& f) { KvByKey(f, "base.u32").key = std::string(65536, 'k'); },
       "string length 65536 exceeds the limit of 65535"},
  };
}

// general.alignment.
std::vector<CorruptCase> AlignmentCases() {
  auto set_alignment = [](uint32_t type, std::vector<uint8_t> value) {
    return [=](RawFile& f) {
      KvByKey(f, "general.alignment").type = type;
      KvByKey(f, "general.alignment").value = value;
    };
  };
  return {
      {"alignment_0", set_alignment(kU32, Encode<uint32_t>(0)),
       "general.alignment is 0, must be a non-zero power of two"},
      {"alignment_48", set_alignment(kU32, Encode<uint32_t>(48)),
       "general.alignment is 48, must be a non-zero power of two"},
      {"alignment_u64", set_alignment(10, Encode<uint64_t>(32)),
       "general.alignment must be a u32, not u64"},
      {"alignment_string", set_alignment(8, EncodeString("32")),
       "general.alignment must be a u32, not string"},
      {"alignment_2_pow_31", set_alignment(kU32, Encode<uint32_t>(1u << 31)),
       "before the data section starts at byte 2147483648"},
      {"alignment_64_layout_32", set_alignment(kU32, Encode<uint32_t>(64)),
       "not a multiple of the alignment 64"},
  };
}

// Tensor infos and the data section.
std::vector<CorruptCase> TensorCases() {
  auto set_tensor_dims = [](const char* name, std::vector<uint64_t> dims) {
    return [=](RawFile& f) { TensorByName(f, name).dims = dims; };
  };
  auto set_offset = [](const char* name, uint64_t offset) {
    return [=](RawFile& f) { TensorByName(f, name).offset = offset; };
  };
  return {
      {"n_dims_5", set_tensor_dims("output_norm.weight", {8, 1, 1, 1, 1}),
       "tensor 2 'output_norm.weight' at byte"},
      {"n_dims_huge", [](RawFile& f) { TensorByName(f, "output_norm.weight").n_dims = ~0u; },
       "n_dims 4294967295 exceeds the maximum of 4"},
      {"zero_dim", set_tensor_dims("token_embd.weight", {4, 0}), "dim 1 is 0, must be in [1,"},
      {"dim_above_int64", set_tensor_dims("token_embd.weight", {4, 1ull << 63}),
       "dim 1 is 9223372036854775808"},
      {"elements_overflow", set_tensor_dims("token_embd.weight", {1ull << 32, 1ull << 32, 4}),
       "element count of shape [4294967296, 4294967296, 4] overflows int64"},
      {"bytes_overflow", set_tensor_dims("token_embd.weight", {1ull << 31, 1ull << 31}),
       "byte size overflows 64 bits at dim 1"},
      {"removed_tensor_type", [](RawFile& f) { TensorByName(f, "token_embd.weight").type = 4; },
       "tensor 0 'token_embd.weight' at byte 382: unknown ggml tensor type id 4"},
      {"unknown_tensor_type", [](RawFile& f) { f.tensors[1].type = 1000; },
       "unknown ggml tensor type id 1000"},
      {"row_not_whole_blocks", set_tensor_dims("blk.0.attn_q.weight", {16, 4}),
       "row of 16 elements is not a whole number of 32-element q8_0 blocks"},
      {"tensor_name_too_long", [](RawFile& f) { f.tensors[1].name = std::string(64, 'n'); },
       "tensor 1 name at byte 439: string length 64 exceeds the limit of 63"},
      {"duplicate_tensor_name", [](RawFile& f) { f.tensors[2].name = f.tensors[0].name; },
       "tensor 2 'token_embd.weight' at byte 498: duplicate tensor name (first is tensor 0)"},
      {"offset_past_eof", set_offset("output_norm.weight", 1 << 20),
       "tensor 2 'output_norm.weight': data at offset 1048576 (16 bytes) runs past the end of the "
       "data section (size 192)"},
      {"offset_overflows", set_offset("output_norm.weight", 0xFFFFFFFFFFFFFFE0ull),
       "runs past the end of the data section"},
      {"misaligned_offset", set_offset("blk.0.attn_q.weight", 65),
       "tensor 1 'blk.0.attn_q.weight': offset 65 is not a multiple of the alignment 32"},
      {"overlapping_tensors", set_offset("blk.0.attn_q.weight", 32),
       "tensor 1 'blk.0.attn_q.weight': data [32, 100) overlaps tensor 0 'token_embd.weight' at "
       "[0, 48)"},
      {"same_offset", set_offset("output_norm.weight", 0), "overlaps"},
      {"no_data_section", [](RawFile& f) { f.data.clear(); },
       "tensor 0 'token_embd.weight': data at offset 0 (48 bytes) runs past the end of the data "
       "section (size 0)"},
      {"truncated_data", [](RawFile& f) { f.data.resize(f.data.size() - 20); },
       "tensor 2 'output_norm.weight': data at offset 160 (16 bytes) runs past the end of the "
       "data section (size 172)"},
      {"no_padding_before_data", [](RawFile& f) { f.padding_alignment = 1; }, ""},
  };
}

// Every case, in the order above.
std::vector<CorruptCase> Cases() {
  std::vector<CorruptCase> all;
  for (std::vector<CorruptCase> (*group)() :
       {&HeaderCases, &MetadataCases, &AlignmentCases, &TensorCases}) {
    for (CorruptCase& c : group()) all.push_back(std::move(c));
  }
  return all;
}

TEST(GgufCorruptTest, BaseFileIsValid) {
  Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(Serialize(BaseRawFile()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  TouchEverything(**f);
  EXPECT_EQ((*f)->tensors().size(), 3u);
}

TEST(GgufCorruptTest, EachBrokenFieldIsNamed) {
  for (const CorruptCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    RawFile raw = BaseRawFile();
    c.mutate(raw);
    Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(Serialize(raw));
    ASSERT_FALSE(f.ok()) << "accepted";
    EXPECT_THAT(f.status().message(), HasSubstr(c.expected));
    EXPECT_TRUE(f.status().code() == StatusCode::kCorrupt ||
                f.status().code() == StatusCode::kOutOfRange)
        << f.status().ToString();
    std::cout << "[" << c.name << "] " << f.status().ToString() << "\n";
  }
}

TEST(GgufCorruptTest, KeyLengthPastEndOfFile) {
  RawFile raw = BaseRawFile();
  std::vector<uint8_t> bytes = Serialize(raw);
  // Metadata key 3's name length sits after the 24-byte header and keys 0..2.
  uint64_t at = 24;
  for (int i = 0; i < 3; ++i) at += 8 + raw.kvs[i].key.size() + 4 + raw.kvs[i].value.size();
  uint64_t huge = 99999999;
  std::memcpy(bytes.data() + at, &huge, sizeof(huge));
  Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(),
              HasSubstr(fmt::format("metadata key 3 name at byte {}: string length 99999999 "
                                    "exceeds the",
                                    at)));
}

TEST(GgufCorruptTest, EveryTruncationBeforeTheLastTensorEndFails) {
  std::vector<uint8_t> bytes = Serialize(BaseRawFile());
  uint64_t last_end = gguf_test::BaseLastTensorEnd();
  ASSERT_LT(last_end, bytes.size());
  for (uint64_t n = 0; n <= bytes.size(); ++n) {
    Result<std::unique_ptr<GgufFile>> f =
        GgufFile::FromBytes(std::span<const uint8_t>(bytes.data(), n));
    if (n < last_end) {
      ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes accepted";
      ASSERT_FALSE(f.status().message().empty());
    } else {
      // Only the padding after the last tensor is missing: still a complete file.
      ASSERT_TRUE(f.ok()) << n << ": " << f.status().ToString();
    }
  }
}

TEST(GgufCorruptTest, EveryHeaderByteChangedNeverCrashes) {
  const std::vector<uint8_t> base = Serialize(BaseRawFile());
  uint64_t header_end = base.size() - BaseRawFile().data.size();
  int accepted = 0;
  for (uint64_t i = 0; i < header_end; ++i) {
    for (uint8_t replacement :
         {uint8_t{0x00}, uint8_t{0xff}, uint8_t(base[i] ^ 0x01), uint8_t(base[i] + 0x40)}) {
      std::vector<uint8_t> bytes = base;
      bytes[i] = replacement;
      Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(bytes);
      if (f.ok()) {
        TouchEverything(**f);
        ++accepted;
      } else {
        ASSERT_FALSE(f.status().message().empty());
      }
    }
  }
  // Values and names can change without breaking the format; most changes must be caught.
  EXPECT_GT(accepted, 0);
}

// A large file that is not GGUF is refused from its first bytes, in both load modes, before it
// is read or mapped whole: here a sparse 64 GiB file of zeros, which neither mode could load.
TEST(GgufCorruptTest, LargeNonGgufFileIsRefusedFromItsHeader) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "kvengine_sparse_not_gguf.gguf").string();
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t{64} << 30), 0);
  close(fd);
  for (GgufFile::LoadMode mode : {GgufFile::LoadMode::kRead, GgufFile::LoadMode::kMap}) {
    Result<std::unique_ptr<GgufFile>> f = GgufFile::Open(path, mode);
    ASSERT_FALSE(f.ok());
    EXPECT_THAT(f.status().message(), HasSubstr("not a GGUF file: magic is"));
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvengine
