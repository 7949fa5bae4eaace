// libFuzzer target: arbitrary bytes through GgufFile::FromBytes. A rejected input must carry a
// message; an accepted one must satisfy the reader's documented invariants, survive every
// accessor, and round-trip through GgufWriter to a file that reads back the same. Any violation
// traps, which libFuzzer reports as a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/checked_math.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace kvengine {
namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Keeps a read that nothing uses, so that ASan checks it instead of the optimizer dropping it.
void KeepRead(int value) { asm volatile("" : : "r"(value) : "memory"); }

// Every accessor on every value, arrays recursively.
void TouchValue(const GgufValue& v) {
  (void)v.ToString();
  (void)v.AsInt();
  (void)v.AsFloat();
  (void)v.As<std::string_view>();
  (void)v.As<bool>();
  (void)v.As<uint64_t>();
  (void)v.AsStringArray();
  (void)v.AsIntArray();
  (void)v.AsF32Array();
  Result<std::vector<GgufValue>> elements = v.Elements();
  Require(elements.ok() == (v.type() == GgufValueType::kArray));
  if (!elements.ok()) return;
  Require(elements->size() == v.size());
  for (const GgufValue& e : *elements) {
    Require(e.type() == v.element_type());
    TouchValue(e);
  }
}

void CheckTensor(const GgufFile& f, const GgufTensor& t) {
  Require(f.FindTensor(t.name) == &t);
  Require(t.n_dims <= kGgufMaxDims);
  int64_t elements = 1;
  for (int64_t d : t.dims) {
    Require(d >= 1);
    Require(CheckedMul(elements, d, &elements));
  }
  Require(elements == t.n_elements);
  Result<uint64_t> bytes = GgmlTensorBytes(t.type, t.shape());
  Require(bytes.ok() && *bytes == t.byte_size && t.data.size() == t.byte_size);
  Require(t.offset % f.alignment() == 0);
  Require(t.data.data() >= f.bytes().data() &&
          t.data.data() + t.data.size() <= f.bytes().data() + f.bytes().size());
  if (!t.data.empty()) KeepRead(t.data.front() ^ t.data.back());
}

// Copies the file through the writer and reads it back: same keys, values and tensor bytes.
void CheckRoundTrip(const GgufFile& f) {
  GgufWriter writer;
  for (const GgufKv& kv : f.metadata()) Require(writer.AddValue(kv.key, kv.value).ok());
  for (const GgufTensor& t : f.tensors()) {
    Require(writer.AddTensor(t.name, t.type, t.shape(), t.data).ok());
  }
  Result<std::vector<uint8_t>> bytes = writer.WriteToBytes();
  Require(bytes.ok());
  Result<std::unique_ptr<GgufFile>> again = GgufFile::FromBytes(*bytes);
  Require(again.ok());
  const GgufFile& g = **again;
  Require(g.metadata().size() == f.metadata().size());
  Require(g.alignment() == f.alignment());
  for (const GgufKv& kv : f.metadata()) {
    const GgufValue* v = g.Find(kv.key);
    Require(v != nullptr && v->type() == kv.value.type() && v->size() == kv.value.size());
    Require(std::equal(v->payload().begin(), v->payload().end(), kv.value.payload().begin(),
                       kv.value.payload().end()));
  }
  Require(g.tensors().size() == f.tensors().size());
  for (const GgufTensor& t : f.tensors()) {
    const GgufTensor* u = g.FindTensor(t.name);
    Require(u != nullptr && u->type == t.type && u->dims == t.dims && u->n_dims == t.n_dims);
    Require(std::equal(u->data.begin(), u->data.end(), t.data.begin(), t.data.end()));
  }
}

}  // namespace
}  // namespace kvengine

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvengine;  // NOLINT: fuzzer entry point.
  Result<std::unique_ptr<GgufFile>> file =
      GgufFile::FromBytes(std::span<const uint8_t>(data, size));
  if (!file.ok()) {
    Require(!file.status().message().empty());
    return 0;
  }
  const GgufFile& f = **file;
  for (const GgufKv& kv : f.metadata()) {
    Require(f.Find(kv.key) == &kv.value);
    TouchValue(kv.value);
    (void)f.GetInt(kv.key);
    (void)f.GetStringArray(kv.key);
  }
  (void)f.Architecture();
  for (const GgufTensor& t : f.tensors()) CheckTensor(f, t);
  CheckRoundTrip(f);
  return 0;
}
