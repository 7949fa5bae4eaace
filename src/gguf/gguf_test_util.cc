#include "gguf/gguf_test_util.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace kvengine::gguf_test {
namespace {

struct BaseTensor {
  const char* name;
  GgmlType type;
  std::vector<int64_t> dims;
  uint64_t bytes;
};

// The base file's tensors: f32 [4, 3] = 48 B at offset 0, q8_0 [32, 2] = 2 blocks x 34 B = 68 B
// at offset 64, f16 [8] = 16 B at offset 160; the data section is 192 B with padding.
const std::vector<BaseTensor>& BaseTensors() {
  static const auto* tensors = new std::vector<BaseTensor>{
      {"token_embd.weight", GgmlType::kF32, {4, 3}, 48},
      {"blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 2}, 68},
      {"output_norm.weight", GgmlType::kF16, {8}, 16},
  };
  return *tensors;
}

std::vector<uint8_t> PatternBytes(size_t tensor, uint64_t n) {
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 31 + tensor * 7 + 1);
  return out;
}

const std::vector<std::string>& BaseTokens() {
  static const auto* tokens = new std::vector<std::string>{"a", "bc", ""};
  return *tokens;
}

}  // namespace

std::vector<uint8_t> Serialize(const RawFile& file) {
  std::vector<uint8_t> out;
  GgufAppendScalar(&out, file.magic);
  GgufAppendScalar(&out, file.version);
  GgufAppendScalar<uint64_t>(&out, file.tensor_count.value_or(file.tensors.size()));
  GgufAppendScalar<uint64_t>(&out, file.kv_count.value_or(file.kvs.size()));
  for (const RawKv& kv : file.kvs) {
    GgufAppendString(&out, kv.key);
    GgufAppendScalar(&out, kv.type);
    GgufAppendBytes(&out, kv.value);
  }
  for (const RawTensor& t : file.tensors) {
    GgufAppendString(&out, t.name);
    GgufAppendScalar<uint32_t>(&out, t.n_dims.value_or(static_cast<uint32_t>(t.dims.size())));
    for (uint64_t d : t.dims) GgufAppendScalar(&out, d);
    GgufAppendScalar(&out, t.type);
    GgufAppendScalar(&out, t.offset);
  }
  GgufAppendPadding(&out, file.padding_alignment);
  GgufAppendBytes(&out, file.data);
  return out;
}

std::vector<uint8_t> EncodeString(std::string_view text) {
  std::vector<uint8_t> out;
  GgufAppendString(&out, text);
  return out;
}

std::vector<uint8_t> EncodeU32Array(const std::vector<uint32_t>& values,
                                    std::optional<uint64_t> count) {
  std::vector<uint8_t> out;
  GgufAppendArrayHeader(&out, GgufValueType::kU32, count.value_or(values.size()));
  for (uint32_t v : values) GgufAppendScalar(&out, v);
  return out;
}

std::vector<uint8_t> EncodeNestedArray(int depth) {
  std::vector<uint8_t> out;
  for (int level = depth; level > 1; --level) GgufAppendArrayHeader(&out, GgufValueType::kArray, 1);
  GgufAppendArrayHeader(&out, GgufValueType::kU8, 1);
  out.push_back(7);
  return out;
}

GgufWriter BaseWriter() {
  GgufWriter w;
  EXPECT_TRUE(w.SetAlignment(32).ok());
  EXPECT_TRUE(w.AddString("general.architecture", "llama").ok());
  EXPECT_TRUE(w.AddString("general.name", "base").ok());
  EXPECT_TRUE(w.AddU32("base.u32", 7).ok());
  EXPECT_TRUE(w.AddI8("base.i8", -3).ok());
  EXPECT_TRUE(w.AddF32("base.f32", 0.25f).ok());
  EXPECT_TRUE(w.AddBool("base.bool", true).ok());
  EXPECT_TRUE(w.AddStringArray("base.tokens", BaseTokens()).ok());
  EXPECT_TRUE(w.AddArray("base.ids", std::vector<uint32_t>{1, 2, 3}).ok());
  EXPECT_TRUE(w.AddEncoded("base.nested", GgufValueType::kArray, EncodeNestedArray(2)).ok());
  const auto& tensors = BaseTensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const BaseTensor& t = tensors[i];
    EXPECT_TRUE(w.AddTensor(t.name, t.type, t.dims, PatternBytes(i, t.bytes)).ok());
  }
  return w;
}

RawFile BaseRawFile() {
  RawFile f;
  auto u32 = static_cast<uint32_t>(GgufValueType::kU32);
  auto str = static_cast<uint32_t>(GgufValueType::kString);
  auto arr = static_cast<uint32_t>(GgufValueType::kArray);
  std::vector<uint8_t> tokens;
  GgufAppendArrayHeader(&tokens, GgufValueType::kString, BaseTokens().size());
  for (const std::string& t : BaseTokens()) GgufAppendString(&tokens, t);
  f.kvs = {
      {"general.alignment", u32, Encode<uint32_t>(32)},
      {"general.architecture", str, EncodeString("llama")},
      {"general.name", str, EncodeString("base")},
      {"base.u32", u32, Encode<uint32_t>(7)},
      {"base.i8", static_cast<uint32_t>(GgufValueType::kI8), Encode<int8_t>(-3)},
      {"base.f32", static_cast<uint32_t>(GgufValueType::kF32), Encode<float>(0.25f)},
      {"base.bool", static_cast<uint32_t>(GgufValueType::kBool), Encode<uint8_t>(1)},
      {"base.tokens", arr, tokens},
      {"base.ids", arr, EncodeU32Array({1, 2, 3})},
      {"base.nested", arr, EncodeNestedArray(2)},
  };
  const auto& tensors = BaseTensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const BaseTensor& t = tensors[i];
    RawTensor raw{t.name, {}, std::nullopt, static_cast<uint32_t>(t.type), f.data.size()};
    for (int64_t d : t.dims) raw.dims.push_back(static_cast<uint64_t>(d));
    f.tensors.push_back(raw);
    GgufAppendBytes(&f.data, PatternBytes(i, t.bytes));
    GgufAppendPadding(&f.data, 32);
  }
  return f;
}

uint64_t BaseLastTensorEnd() {
  RawFile f = BaseRawFile();
  uint64_t data_start = Serialize(f).size() - f.data.size();
  return data_start + f.tensors.back().offset + BaseTensors().back().bytes;
}

RawKv& KvByKey(RawFile& file, std::string_view key) {
  for (RawKv& kv : file.kvs) {
    if (kv.key == key) return kv;
  }
  ADD_FAILURE() << "no key " << key;
  return file.kvs.front();
}

RawTensor& TensorByName(RawFile& file, std::string_view name) {
  for (RawTensor& t : file.tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return file.tensors.front();
}

std::string ModelsDir() {
  if (const char* dir = std::getenv("KVENGINE_MODELS_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return std::string(KVENGINE_SOURCE_DIR) + "/../shared/models";
}

}  // namespace kvengine::gguf_test
