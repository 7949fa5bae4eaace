// gguf_fuzz_seeds DIR: writes a handful of small valid GGUF files made by GgufWriter into DIR, the
// seed corpus of gguf_fuzz. They cover every metadata value type, nested arrays, several tensor
// types, shapes and alignments, and a file without tensors.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/seed_corpus.h"
#include "gguf/gguf_encoding.h"
#include "gguf/gguf_writer.h"

namespace kvengine {
namespace {

std::vector<uint8_t> Pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 13 + seed);
  return out;
}

Status AddTensor(GgufWriter& w, const std::string& name, GgmlType type, std::vector<int64_t> dims) {
  KV_ASSIGN_OR_RETURN(uint64_t bytes, GgmlTensorBytes(type, dims));
  return w.AddTensor(name, type, dims, Pattern(bytes, static_cast<uint8_t>(name.size())));
}

// A llama-shaped model: architecture keys, a tiny vocabulary, one layer of mixed types.
Status TinyLlama(GgufWriter& w) {
  KV_RETURN_IF_ERROR(w.AddString("general.architecture", "llama"));
  KV_RETURN_IF_ERROR(w.AddU32("llama.embedding_length", 32));
  KV_RETURN_IF_ERROR(w.AddU32("llama.block_count", 1));
  KV_RETURN_IF_ERROR(w.AddF32("llama.attention.layer_norm_rms_epsilon", 1e-5f));
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "b"};
  KV_RETURN_IF_ERROR(w.AddStringArray("tokenizer.ggml.tokens", tokens));
  KV_RETURN_IF_ERROR(w.AddArray("tokenizer.ggml.scores", std::vector<float>{0, 0, 0, -1, -2}));
  KV_RETURN_IF_ERROR(w.AddArray("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 1, 1}));
  KV_RETURN_IF_ERROR(AddTensor(w, "token_embd.weight", GgmlType::kF16, {32, 5}));
  KV_RETURN_IF_ERROR(AddTensor(w, "blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 32}));
  KV_RETURN_IF_ERROR(AddTensor(w, "blk.0.ffn_up.weight", GgmlType::kQ4_K, {256, 2}));
  return AddTensor(w, "output_norm.weight", GgmlType::kF32, {32});
}

// One key of every value type, arrays of every element type, arrays nested 3 deep.
Status AllValueTypes(GgufWriter& w) {
  KV_RETURN_IF_ERROR(w.AddU8("u8", 1));
  KV_RETURN_IF_ERROR(w.AddI8("i8", -1));
  KV_RETURN_IF_ERROR(w.AddU16("u16", 2));
  KV_RETURN_IF_ERROR(w.AddI16("i16", -2));
  KV_RETURN_IF_ERROR(w.AddU32("u32", 3));
  KV_RETURN_IF_ERROR(w.AddI32("i32", -3));
  KV_RETURN_IF_ERROR(w.AddU64("u64", 4));
  KV_RETURN_IF_ERROR(w.AddI64("i64", -4));
  KV_RETURN_IF_ERROR(w.AddF32("f32", 0.5f));
  KV_RETURN_IF_ERROR(w.AddF64("f64", 0.25));
  KV_RETURN_IF_ERROR(w.AddBool("bool", true));
  KV_RETURN_IF_ERROR(w.AddString("string", "text"));
  KV_RETURN_IF_ERROR(w.AddArray("a.u8", std::vector<uint8_t>{1, 2}));
  KV_RETURN_IF_ERROR(w.AddArray("a.i16", std::vector<int16_t>{-1, 2}));
  KV_RETURN_IF_ERROR(w.AddArray("a.u64", std::vector<uint64_t>{1, 2}));
  KV_RETURN_IF_ERROR(w.AddArray("a.f64", std::vector<double>{1, 2}));
  KV_RETURN_IF_ERROR(w.AddBoolArray("a.bool", {true, false}));
  KV_RETURN_IF_ERROR(w.AddStringArray("a.string", std::vector<std::string>{"x", ""}));
  std::vector<uint8_t> nested;  // [[[1, 2]], []]
  GgufAppendArrayHeader(&nested, GgufValueType::kArray, 2);
  GgufAppendArrayHeader(&nested, GgufValueType::kArray, 1);
  GgufAppendArrayHeader(&nested, GgufValueType::kU16, 2);
  GgufAppendScalar<uint16_t>(&nested, 1);
  GgufAppendScalar<uint16_t>(&nested, 2);
  GgufAppendArrayHeader(&nested, GgufValueType::kF32, 0);
  KV_RETURN_IF_ERROR(w.AddEncoded("a.nested", GgufValueType::kArray, nested));
  return AddTensor(w, "t", GgmlType::kI32, {3});
}

// Many small tensors of many types, 4-d shapes and a scalar, at alignment 64.
Status ManyTensors(GgufWriter& w) {
  KV_RETURN_IF_ERROR(w.SetAlignment(64));
  KV_RETURN_IF_ERROR(AddTensor(w, "scalar", GgmlType::kF32, {}));
  KV_RETURN_IF_ERROR(AddTensor(w, "4d", GgmlType::kBF16, {2, 3, 2, 2}));
  KV_RETURN_IF_ERROR(AddTensor(w, "q4_0", GgmlType::kQ4_0, {64}));
  KV_RETURN_IF_ERROR(AddTensor(w, "q6_K", GgmlType::kQ6_K, {256}));
  KV_RETURN_IF_ERROR(AddTensor(w, "iq2_xxs", GgmlType::kIQ2_XXS, {256}));
  KV_RETURN_IF_ERROR(AddTensor(w, "mxfp4", GgmlType::kMXFP4, {32, 2}));
  return AddTensor(w, "i8", GgmlType::kI8, {5, 1, 1});
}

Status MetadataOnly(GgufWriter& w) {
  KV_RETURN_IF_ERROR(w.SetAlignment(8));
  return w.AddString("general.architecture", "none");
}

Status Empty(GgufWriter&) { return Status::Ok(); }

}  // namespace
}  // namespace kvengine

int main(int argc, char** argv) {
  using namespace kvengine;  // NOLINT: a small tool's main.
  const std::optional<std::filesystem::path> dir = SeedCorpusDir(argc, argv);
  if (!dir) return 2;
  struct Seed {
    const char* name;
    Status (*build)(GgufWriter&);
  };
  const Seed seeds[] = {{"tiny_llama", TinyLlama},
                        {"all_value_types", AllValueTypes},
                        {"many_tensors", ManyTensors},
                        {"metadata_only", MetadataOnly},
                        {"empty", Empty}};
  for (const Seed& seed : seeds) {
    GgufWriter writer;
    Status status = seed.build(writer);
    const std::string path = *dir / (std::string(seed.name) + ".gguf");
    if (status.ok()) status = writer.WriteToFile(path);
    if (!status.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), status.ToString().c_str());
      return 1;
    }
  }
  std::printf("wrote %zu seeds to %s\n", std::size(seeds), dir->c_str());
  return 0;
}
