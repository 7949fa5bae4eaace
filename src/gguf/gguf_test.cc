// Round trips writer -> reader for every value type and layout, the type tables, writer errors,
// and the real llama.cpp files in ../shared/models.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_test_util.h"
#include "gguf/gguf_writer.h"

namespace kvengine {
namespace {

using gguf_test::BaseRawFile;
using gguf_test::BaseWriter;
using gguf_test::Serialize;
using ::testing::HasSubstr;

std::unique_ptr<GgufFile> ReadBack(const GgufWriter& writer) {
  Result<std::vector<uint8_t>> bytes = writer.WriteToBytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

TEST(GgmlTypeTest, IdsNamesAndSizes) {
  EXPECT_EQ(*GgmlTypeFromId(0), GgmlType::kF32);
  EXPECT_EQ(*GgmlTypeFromId(30), GgmlType::kBF16);
  EXPECT_EQ(*GgmlTypeFromId(39), GgmlType::kMXFP4);
  for (uint32_t removed : {4u, 5u, 31u, 36u, 40u, 1000u}) {
    Result<GgmlType> t = GgmlTypeFromId(removed);
    ASSERT_FALSE(t.ok());
    EXPECT_THAT(t.status().message(), HasSubstr(std::to_string(removed)));
  }
  EXPECT_STREQ(GgmlTypeName(GgmlType::kQ4_K), "q4_K");
  EXPECT_EQ(*GgmlTypeFromName("Q4_K"), GgmlType::kQ4_K);
  EXPECT_EQ(*GgmlTypeFromName("iq2_xxs"), GgmlType::kIQ2_XXS);
  EXPECT_FALSE(GgmlTypeFromName("q4_2").ok());
  GgmlTypeTraits q6k = GetGgmlTypeTraits(GgmlType::kQ6_K);
  EXPECT_EQ(q6k.block_size, 256u);
  EXPECT_EQ(q6k.bytes_per_block, 210u);
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kQ8_0, 64), 68u);
  EXPECT_EQ(*GgmlRowBytes(GgmlType::kBF16, 3), 6u);
  EXPECT_FALSE(GgmlRowBytes(GgmlType::kQ4_0, 33).ok());
  EXPECT_FALSE(GgmlRowBytes(GgmlType::kF64, uint64_t{1} << 62).ok());  // Overflows.
  std::vector<int64_t> dims = {256, 3, 2};
  EXPECT_EQ(*GgmlTensorBytes(GgmlType::kQ4_K, dims), 144u * 6);
  // Every known type: id round trip, name round trip, a sane block.
  for (uint32_t id = 0; id < 64; ++id) {
    Result<GgmlType> t = GgmlTypeFromId(id);
    if (!t.ok()) continue;
    EXPECT_EQ(static_cast<uint32_t>(*t), id);
    EXPECT_EQ(*GgmlTypeFromName(GgmlTypeName(*t)), *t);
    GgmlTypeTraits traits = GetGgmlTypeTraits(*t);
    EXPECT_TRUE(traits.block_size == 1 || traits.block_size == 32 || traits.block_size == 256);
    EXPECT_GT(traits.bytes_per_block, 0u);
  }
}

TEST(GgufWriterTest, BaseFileMatchesRawDescription) {
  Result<std::vector<uint8_t>> bytes = BaseWriter().WriteToBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, Serialize(BaseRawFile()));
  EXPECT_EQ(*BaseWriter().FileSize(), bytes->size());
}

TEST(GgufRoundTripTest, EveryScalarType) {
  GgufWriter w;
  ASSERT_TRUE(w.AddU8("u8", 250).ok());
  ASSERT_TRUE(w.AddI8("i8", -128).ok());
  ASSERT_TRUE(w.AddU16("u16", 65535).ok());
  ASSERT_TRUE(w.AddI16("i16", -32768).ok());
  ASSERT_TRUE(w.AddU32("u32", 4294967295u).ok());
  ASSERT_TRUE(w.AddI32("i32", -2147483647 - 1).ok());
  ASSERT_TRUE(w.AddU64("u64", std::numeric_limits<uint64_t>::max()).ok());
  ASSERT_TRUE(w.AddI64("i64", std::numeric_limits<int64_t>::min()).ok());
  ASSERT_TRUE(w.AddF32("f32", 1e-5f).ok());
  ASSERT_TRUE(w.AddF64("f64", -2.5e300).ok());
  ASSERT_TRUE(w.AddBool("bool", true).ok());
  ASSERT_TRUE(w.AddBool("false", false).ok());
  ASSERT_TRUE(w.AddString("str", std::string_view("a\0b", 3)).ok());
  ASSERT_TRUE(w.AddString("empty", "").ok());
  std::unique_ptr<GgufFile> f = ReadBack(w);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_FALSE(f->Has(kGgufAlignmentKey));  // Default alignment: no key written.
  EXPECT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(*f->GetU8("u8"), 250);
  EXPECT_EQ(*f->GetI8("i8"), -128);
  EXPECT_EQ(*f->GetU16("u16"), 65535);
  EXPECT_EQ(*f->GetI16("i16"), -32768);
  EXPECT_EQ(*f->GetU32("u32"), 4294967295u);
  EXPECT_EQ(*f->GetI32("i32"), -2147483647 - 1);
  EXPECT_EQ(*f->GetU64("u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*f->GetI64("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f->GetF32("f32"), 1e-5f);
  EXPECT_EQ(*f->GetF64("f64"), -2.5e300);
  EXPECT_TRUE(*f->GetBool("bool"));
  EXPECT_FALSE(*f->GetBool("false"));
  EXPECT_EQ(*f->GetString("str"), std::string_view("a\0b", 3));
  EXPECT_EQ(*f->GetString("empty"), "");
  // Conveniences across types.
  EXPECT_EQ(*f->GetInt("u8"), 250);
  EXPECT_EQ(*f->GetInt("i16"), -32768);
  EXPECT_EQ(*f->GetInt("u32"), 4294967295);
  EXPECT_EQ(*f->GetInt("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_THAT(f->GetInt("u64").status().message(), HasSubstr("does not fit"));
  EXPECT_THAT(f->GetInt("f32").status().message(), HasSubstr("is f32, not an integer"));
  EXPECT_FLOAT_EQ(static_cast<float>(*f->GetFloat("f32")), 1e-5f);
  EXPECT_EQ(*f->GetFloat("f64"), -2.5e300);
  // Wrong type and missing key name the key and both types.
  Result<int32_t> wrong = f->GetI32("u32");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("'u32': value is u32, not i32"));
  EXPECT_EQ(f->GetU32("nope").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(f->Architecture().ok());
  EXPECT_EQ(f->Find("nope"), nullptr);
  EXPECT_EQ(f->Find("empty")->ToString(), "\"\"");
  EXPECT_EQ(f->Find("u64")->ToString(), "18446744073709551615");
  EXPECT_EQ(f->Find("bool")->ToString(), "true");
}

TEST(GgufRoundTripTest, EveryArrayType) {
  GgufWriter w;
  ASSERT_TRUE(w.AddArray("u8", std::vector<uint8_t>{0, 255}).ok());
  ASSERT_TRUE(w.AddArray("i8", std::vector<int8_t>{-1, 1}).ok());
  ASSERT_TRUE(w.AddArray("u16", std::vector<uint16_t>{7, 65535}).ok());
  ASSERT_TRUE(w.AddArray("i16", std::vector<int16_t>{-7}).ok());
  ASSERT_TRUE(w.AddArray("u32", std::vector<uint32_t>{1, 2, 3}).ok());
  ASSERT_TRUE(w.AddArray("i32", std::vector<int32_t>{-1, 0, 1}).ok());
  ASSERT_TRUE(w.AddArray("u64", std::vector<uint64_t>{uint64_t{1} << 40}).ok());
  ASSERT_TRUE(w.AddArray("i64", std::vector<int64_t>{-(int64_t{1} << 40)}).ok());
  ASSERT_TRUE(w.AddArray("f32", std::vector<float>{0.5f, -1.5f}).ok());
  ASSERT_TRUE(w.AddArray("f64", std::vector<double>{1e100}).ok());
  ASSERT_TRUE(w.AddArray("empty", std::vector<float>{}).ok());
  ASSERT_TRUE(w.AddBoolArray("bool", {true, false, true}).ok());
  ASSERT_TRUE(w.AddStringArray("str", std::vector<std::string>{"<s>", "", "héllo"}).ok());
  ASSERT_TRUE(w.AddEncoded("nested", GgufValueType::kArray, gguf_test::EncodeNestedArray(4)).ok());
  std::unique_ptr<GgufFile> f = ReadBack(w);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetIntArray("u8"), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(*f->GetIntArray("i8"), (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(*f->GetIntArray("u16"), (std::vector<int64_t>{7, 65535}));
  EXPECT_EQ(*f->GetIntArray("i16"), (std::vector<int64_t>{-7}));
  EXPECT_EQ(*f->GetIntArray("u32"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(*f->GetIntArray("i32"), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*f->GetIntArray("u64"), (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_EQ(*f->GetIntArray("i64"), (std::vector<int64_t>{-(int64_t{1} << 40)}));
  EXPECT_EQ(*f->GetF32Array("f32"), (std::vector<float>{0.5f, -1.5f}));
  EXPECT_TRUE(f->GetF32Array("empty")->empty());
  EXPECT_EQ(*f->GetStringArray("str"), (std::vector<std::string_view>{"<s>", "", "héllo"}));
  EXPECT_FALSE(f->GetF32Array("f64").ok());
  EXPECT_FALSE(f->GetStringArray("u32").ok());
  EXPECT_FALSE(f->GetIntArray("str").ok());

  GgufValue f64 = *f->Get("f64");
  EXPECT_EQ(f64.element_type(), GgufValueType::kF64);
  EXPECT_EQ(*f64.Elements()->at(0).As<double>(), 1e100);
  std::vector<GgufValue> bools = *f->Get("bool")->Elements();
  ASSERT_EQ(bools.size(), 3u);
  EXPECT_TRUE(*bools[0].As<bool>());
  EXPECT_FALSE(*bools[1].As<bool>());
  // [[[[7]]]]: four levels of arrays.
  GgufValue v = *f->Get("nested");
  for (int level = 0; level < 3; ++level) {
    ASSERT_EQ(v.element_type(), GgufValueType::kArray);
    v = v.Elements()->at(0);
  }
  EXPECT_EQ(*v.AsIntArray(), (std::vector<int64_t>{7}));
  EXPECT_EQ(f->Get("nested")->ToString(), "[[[[7]]]]");
  EXPECT_EQ(f->Get("u32")->ToString(), "[1, 2, 3]");
  EXPECT_EQ(f->Get("u32")->ToString(2), "[1, 2, ... (3 x u32)]");
}

TEST(GgufRoundTripTest, TensorsAlignmentAndStreaming) {
  for (uint32_t alignment : {1u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w;
    ASSERT_TRUE(w.SetAlignment(alignment).ok());
    std::vector<uint8_t> small(4 * 3 * 4, 0x5a);
    ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, std::vector<int64_t>{4, 3}, small).ok());
    // A streamed q4_K tensor [512, 3, 2, 1]: 2 blocks of 144 B per row, written 100 B at a time.
    const uint64_t kQ4KBytes = 2 * 144 * 3 * 2;
    auto filler = [&](GgufSink& sink) -> Status {
      std::vector<uint8_t> chunk;
      for (uint64_t i = 0; i < kQ4KBytes; ++i) {
        chunk.push_back(static_cast<uint8_t>(i));
        if (chunk.size() == 100 || i + 1 == kQ4KBytes) {
          KV_RETURN_IF_ERROR(sink.Write(chunk));
          chunk.clear();
        }
      }
      return Status::Ok();
    };
    ASSERT_TRUE(w.AddTensor("b", GgmlType::kQ4_K, std::vector<int64_t>{512, 3, 2, 1}, filler).ok());
    ASSERT_TRUE(w.AddTensor("scalar", GgmlType::kI32, std::vector<int64_t>{},
                            std::vector<uint8_t>{1, 0, 0, 0})
                    .ok());
    std::unique_ptr<GgufFile> f = ReadBack(w);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(*f->GetU32(kGgufAlignmentKey), alignment);
    ASSERT_EQ(f->tensors().size(), 3u);
    const GgufTensor* b = f->FindTensor("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, GgmlType::kQ4_K);
    EXPECT_EQ(b->n_dims, 4u);
    EXPECT_EQ(b->n_elements, 512 * 3 * 2);
    EXPECT_EQ(b->byte_size, kQ4KBytes);
    EXPECT_EQ(b->data.size(), kQ4KBytes);
    EXPECT_EQ(b->data[101], 101);
    EXPECT_EQ(b->offset % alignment, 0u);
    EXPECT_EQ((f->data_offset() + b->offset) % alignment, 0u);
    EXPECT_EQ(f->FindTensor("a")->data[47], 0x5a);
    const GgufTensor* scalar = f->FindTensor("scalar");
    EXPECT_EQ(scalar->n_dims, 0u);
    EXPECT_EQ(scalar->n_elements, 1);
    EXPECT_EQ(scalar->dims[0], 1);
    EXPECT_EQ(f->FindTensor("c"), nullptr);
  }
}

TEST(GgufRoundTripTest, FileAndCopyThroughAddValue) {
  std::string path = ::testing::TempDir() + "/gguf_test_base.gguf";
  ASSERT_TRUE(BaseWriter().WriteToFile(path).ok());
  Result<std::unique_ptr<GgufFile>> opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = **opened;
  EXPECT_EQ(*f.Architecture(), "llama");
  EXPECT_EQ(*f.GetStringArray("base.tokens"), (std::vector<std::string_view>{"a", "bc", ""}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensors()[1].data.data()) % 32, 0u);  // mmap keeps it.

  // Copy every key and tensor into a new writer: the bytes come out identical.
  GgufWriter copy;
  for (const GgufKv& kv : f.metadata()) ASSERT_TRUE(copy.AddValue(kv.key, kv.value).ok());
  for (const GgufTensor& t : f.tensors()) {
    ASSERT_TRUE(copy.AddTensor(t.name, t.type, t.shape(), t.data).ok());
  }
  EXPECT_EQ(*copy.WriteToBytes(), Serialize(BaseRawFile()));

  // Read into huge-page memory instead of mapped: the same bytes, 2 MiB-aligned.
  Result<std::unique_ptr<GgufFile>> read = GgufFile::Open(path, GgufFile::LoadMode::kRead);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(std::equal(f.bytes().begin(), f.bytes().end(), (*read)->bytes().begin(),
                         (*read)->bytes().end()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*read)->bytes().data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ((*read)->tensors().size(), f.tensors().size());
  std::filesystem::remove(path);
  EXPECT_EQ(GgufFile::Open(path, GgufFile::LoadMode::kRead).status().code(),
            StatusCode::kNotFound);

  EXPECT_EQ(GgufFile::Open(path).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(GgufFile::Open(::testing::TempDir()).ok());  // A directory.
}

// Found by gguf_fuzz: a file without tensors at the largest alignments round-trips without the
// writer padding a header to 1 GiB (there is no data section to align).
TEST(GgufRoundTripTest, NoTensorsAtAHugeAlignmentWritesNoPadding) {
  for (const uint32_t alignment : {1u << 30, 1u << 31}) {
    GgufWriter w;
    ASSERT_TRUE(w.SetAlignment(alignment).ok());
    ASSERT_TRUE(w.AddString("general.name", "x").ok());
    Result<std::vector<uint8_t>> bytes = w.WriteToBytes();
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_LT(bytes->size(), 256u);
    Result<std::unique_ptr<GgufFile>> again = GgufFile::FromBytes(*bytes);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->alignment(), alignment);
    EXPECT_TRUE((*again)->tensors().empty());
  }
}

// The message of writing one f32 tensor `name` of `dims` whose filler writes `bytes` bytes.
std::string FillerWriteError(const char* name, const std::vector<int64_t>& dims, size_t bytes) {
  GgufWriter w;
  EXPECT_TRUE(w.AddTensor(name, GgmlType::kF32, dims, [bytes](GgufSink& sink) {
                 return sink.Write(std::vector<uint8_t>(bytes));
               }).ok());
  return std::string(w.WriteToBytes().status().message());
}

TEST(GgufWriterTest, RejectsWhatTheReaderWouldReject) {
  GgufWriter w;
  std::vector<int64_t> dims = {32};
  std::vector<uint8_t> q8(34);
  EXPECT_TRUE(w.AddU32("k", 1).ok());
  EXPECT_THAT(w.AddI32("k", 1).message(), HasSubstr("added twice"));
  EXPECT_FALSE(w.SetAlignment(0).ok());
  EXPECT_FALSE(w.SetAlignment(48).ok());
  EXPECT_THAT(w.AddU64(kGgufAlignmentKey, 64).message(), HasSubstr("must be a u32"));
  EXPECT_TRUE(w.AddU32(kGgufAlignmentKey, 64).ok());
  EXPECT_EQ(w.alignment(), 64u);
  EXPECT_FALSE(w.AddEncoded("bad", GgufValueType::kBool, std::vector<uint8_t>{2}).ok());
  EXPECT_FALSE(w.AddEncoded("trail", GgufValueType::kU8, std::vector<uint8_t>{1, 2}).ok());
  EXPECT_FALSE(w.AddEncoded("deep", GgufValueType::kArray, gguf_test::EncodeNestedArray(5)).ok());
  EXPECT_FALSE(w.AddString(std::string(70000, 'k'), "").ok());
  EXPECT_TRUE(w.AddTensor("t", GgmlType::kQ8_0, dims, q8).ok());
  EXPECT_THAT(w.AddTensor("t", GgmlType::kQ8_0, dims, q8).message(), HasSubstr("added twice"));
  EXPECT_FALSE(w.AddTensor(std::string(64, 'n'), GgmlType::kQ8_0, dims, q8).ok());
  EXPECT_FALSE(w.AddTensor("odd", GgmlType::kQ8_0, std::vector<int64_t>{16}, q8).ok());
  EXPECT_FALSE(w.AddTensor("zero", GgmlType::kF32, std::vector<int64_t>{0}, q8).ok());
  EXPECT_FALSE(w.AddTensor("5d", GgmlType::kF32, std::vector<int64_t>{1, 1, 1, 1, 1}, q8).ok());
  EXPECT_FALSE(w.AddTensor("size", GgmlType::kQ8_0, dims, std::vector<uint8_t>(33)).ok());
  EXPECT_FALSE(w.AddTensor("huge", GgmlType::kF32,
                           std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}, q8)
                   .ok());

  EXPECT_THAT(FillerWriteError("s", dims, 8), HasSubstr("wrote 8 of its 128"));
  EXPECT_THAT(FillerWriteError("l", dims, 129), HasSubstr("more than its 128"));
  EXPECT_FALSE(BaseWriter().WriteToFile("/nonexistent-dir/x.gguf").ok());
}

// The real llama.cpp files, when ../shared/models is present.
TEST(GgufRealFileTest, Stories260K) {
  std::string path = gguf_test::ModelsDir() + "/stories260K.gguf";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " not found (set KVENGINE_MODELS_DIR to the shared models directory)";
  }
  Result<std::unique_ptr<GgufFile>> opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = **opened;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(*f.Architecture(), "llama");
  EXPECT_EQ(*f.GetU32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f.GetInt("llama.block_count"), 5);
  EXPECT_EQ(*f.GetInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(*f.GetInt("llama.attention.head_count"), 8);
  EXPECT_EQ(*f.GetInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*f.GetInt("llama.context_length"), 128);
  EXPECT_NEAR(*f.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  EXPECT_EQ(*f.GetString("tokenizer.ggml.model"), "llama");
  std::vector<std::string_view> tokens = *f.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(f.GetF32Array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(f.GetIntArray("tokenizer.ggml.token_type")->at(0), 2);
  EXPECT_EQ(*f.GetU32("tokenizer.ggml.padding_token_id"), 4294967295u);

  ASSERT_EQ(f.tensors().size(), 48u);  // 3 + 5 layers x 9.
  EXPECT_EQ(f.data_offset(), 14176u);
  const GgufTensor* embd = f.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, GgmlType::kF32);
  EXPECT_EQ(embd->n_dims, 2u);
  EXPECT_EQ(embd->dims[0], 64);
  EXPECT_EQ(embd->dims[1], 512);
  EXPECT_EQ(embd->byte_size, 64u * 512 * 4);
  EXPECT_EQ(f.FindTensor("blk.4.ffn_down.weight")->dims[0], 172);
  const GgufTensor& last = f.tensors().back();
  EXPECT_EQ(last.data.data() + last.data.size(), f.bytes().data() + f.bytes().size());
}

TEST(GgufRealFileTest, QuantizedModelsOpen) {
  std::string dir = gguf_test::ModelsDir() + "/quant";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << dir << " not found (set KVENGINE_MODELS_DIR to the shared models directory)";
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    Result<std::unique_ptr<GgufFile>> opened = GgufFile::Open(entry.path().string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    const GgufFile& f = **opened;
    EXPECT_EQ(*f.Architecture(), "llama");
    EXPECT_EQ(*f.GetInt("llama.embedding_length"), 256);
    EXPECT_EQ(f.tensors().size(), 21u);
    for (const GgufTensor& t : f.tensors()) {
      EXPECT_EQ(t.data.size(), *GgmlTensorBytes(t.type, t.shape())) << t.name;
    }
    ++files;
  }
  EXPECT_GE(files, 11);
}

}  // namespace
}  // namespace kvengine
