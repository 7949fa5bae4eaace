// libFuzzer target: synthetic models edited by the input (model_fuzz_format.h) through
// LoadModel, and a model that loads through one forward pass. A rejected model must carry a
// message; an accepted one must build its KV cache or say why, and run a 4-token forward pass to
// n_vocab logits or say why: a malformed model file gets a clear error, never a crash. Any
// violation traps, which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "quant/weight_view.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "model/model_fuzz_format.h"
#include "model/kv_groups.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"

namespace kvengine {
namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Each preset's file, generated once per process.
const GgufFile& Base(size_t preset) {
  static std::unique_ptr<GgufFile> files[model_fuzz::kNumPresets];
  static std::vector<uint8_t> bytes[model_fuzz::kNumPresets];
  if (files[preset] == nullptr) {
    Result<SyntheticModelSpec> spec = FindSyntheticPreset(model_fuzz::kPresets[preset]);
    Require(spec.ok());
    Result<GgufWriter> w = BuildSyntheticWriter(*spec, nullptr);
    Require(w.ok());
    Result<std::vector<uint8_t>> b = w->WriteToBytes();
    Require(b.ok());
    bytes[preset] = std::move(*b);
    Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(bytes[preset]);
    Require(f.ok());
    files[preset] = std::move(*f);
  }
  return *files[preset];
}

struct TensorEdit {
  bool removed = false;
  GgmlType type;
  std::vector<int64_t> dims;
  bool changed = false;
};

struct KeyEdit {
  enum { kKeep, kRemove, kI32, kU64, kString } what = kKeep;
  int32_t value = 0;
};

// The edited model's bytes; nullopt when an edit makes the writer refuse (e.g. a tensor too big).
std::optional<std::vector<uint8_t>> Edited(const GgufFile& base, const model_fuzz::Input& in) {
  const std::vector<GgufKv>& meta = base.metadata();
  const std::vector<GgufTensor>& tensors = base.tensors();
  std::vector<KeyEdit> keys(meta.size());
  std::vector<TensorEdit> ts(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    ts[i].type = tensors[i].type;
    const std::span<const int64_t> shape = tensors[i].shape();
    ts[i].dims.assign(shape.begin(), shape.end());
  }
  for (const model_fuzz::Edit& e : in.edits) {
    using model_fuzz::Op;
    const size_t k = meta.empty() ? 0 : e.index % meta.size();
    const size_t t = tensors.empty() ? 0 : e.index % tensors.size();
    switch (e.op) {
      case Op::kSetI32:
        keys[k] = {KeyEdit::kI32, e.value};
        break;
      case Op::kSetU64:
        keys[k] = {KeyEdit::kU64, e.value};
        break;
      case Op::kRemoveKey:
        keys[k].what = KeyEdit::kRemove;
        break;
      case Op::kSetString:
        keys[k].what = KeyEdit::kString;
        break;
      case Op::kRemoveTensor:
        ts[t].removed = true;
        break;
      case Op::kSetDim: {
        const size_t d = size_t(e.value & 3);
        if (d >= ts[t].dims.size()) ts[t].dims.resize(d + 1, 1);
        ts[t].dims[d] = int64_t((uint32_t(e.value) >> 2) % 4097);  // 0 .. 4096
        ts[t].changed = true;
        break;
      }
      case Op::kSetType:
        if (Result<GgmlType> type = GgmlTypeFromId(uint32_t(e.value) % 64); type.ok()) {
          ts[t].type = *type;
          ts[t].changed = true;
        }
        break;
    }
  }
  GgufWriter w;
  for (size_t i = 0; i < meta.size(); ++i) {
    const std::string_view key = meta[i].key;
    Status s = Status::Ok();
    switch (keys[i].what) {
      case KeyEdit::kKeep:
        s = w.AddValue(key, meta[i].value);
        break;
      case KeyEdit::kRemove:
        break;
      case KeyEdit::kI32:
        s = w.AddI32(key, keys[i].value);
        break;
      case KeyEdit::kU64:
        s = w.AddU64(key, uint64_t(int64_t(keys[i].value)));
        break;
      case KeyEdit::kString:
        s = w.AddString(key, "x");
        break;
    }
    if (!s.ok()) return std::nullopt;
  }
  std::vector<uint8_t> zeros;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (ts[i].removed) continue;
    if (!ts[i].changed) {
      if (!w.AddTensor(tensors[i].name, ts[i].type, ts[i].dims, tensors[i].data).ok()) {
        return std::nullopt;
      }
      continue;
    }
    Result<uint64_t> bytes = GgmlTensorBytes(ts[i].type, ts[i].dims);
    if (!bytes.ok() || *bytes > (uint64_t{16} << 20)) return std::nullopt;
    zeros.assign(size_t(*bytes), 0);
    if (!w.AddTensor(tensors[i].name, ts[i].type, ts[i].dims, zeros).ok()) return std::nullopt;
  }
  Result<std::vector<uint8_t>> out = w.WriteToBytes();
  if (!out.ok()) return std::nullopt;
  return std::move(*out);
}

// A loaded model: its KV cache, then 4 tokens through Forward.
void Run(const Model& model) {
  Result<std::vector<KvGroupSpec>> groups =
      BuildKvGroups(model.config(), UniformDtypes(KvDtype::kF16));
  if (!groups.ok()) {
    Require(!groups.status().message().empty());
    return;
  }
  KvCacheConfig c;
  c.groups = *groups;
  c.block_size = 16;
  c.num_blocks = 8;
  c.max_model_len = 64;
  c.model_fingerprint = model.config().name;
  Result<std::unique_ptr<KvCacheManager>> kv = KvCacheManager::Create(c);
  if (!kv.ok()) {
    Require(!kv.status().message().empty());
    return;
  }
  Require((*kv)->AddSequence(1).ok());
  const int32_t v = int32_t(model.n_vocab());
  Require(v > 0);
  const std::vector<int32_t> ids = {0, 1 % v, 7 % v, (v - 1)};
  Require((*kv)->Append(1, ids).ok);
  static ThreadPool pool(1);
  const SeqChunk chunk[] = {{1, 0, ids, false}};
  ForwardOutput out;
  const Status s = model.Forward(chunk, **kv, pool, &out);
  if (!s.ok()) {
    Require(!s.message().empty());
    return;
  }
  Require(out.n_vocab == v && out.logits.size() == size_t(v));
}

}  // namespace
}  // namespace kvengine

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvengine;  // NOLINT: fuzzer entry point.
  const model_fuzz::Input in =
      model_fuzz::Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  std::optional<std::vector<uint8_t>> bytes = Edited(Base(in.preset), in);
  if (!bytes) return 0;
  // Every other input loads its 2-D matrices wider than one column block in blocks of the
  // narrowest width (64 columns for the float types, 256 for the quantized ones): the same model
  // then runs through the blocked paths.
  GgufLoadOptions options;
  if (size % 2 == 1) {
    options.column_block = [](const GgufTensor& t) -> int64_t {
      if (!ColumnBlockType(t.type) || t.n_dims != 2) return 0;
      return t.dims[0] > ColumnBlockAlign(t.type) ? ColumnBlockAlign(t.type) : 0;
    };
  }
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes, options);  // A copy.
  Require(file.ok());  // The writer's output always reads back.
  std::shared_ptr<const GgufFile> shared(std::move(*file));
  Result<std::unique_ptr<Model>> model = LoadModel(shared, "fuzz");
  if (!model.ok()) {
    Require(!model.status().message().empty());
    return 0;
  }
  Run(**model);
  return 0;
}
