// The input format of model_fuzz (libFuzzer) and its seed writer: a synthetic model preset and a
// list of edits to its GGUF (metadata values changed, retyped or removed; tensors removed,
// reshaped or retyped). Structured so that mutations reach the model loader's checks of
// hyperparameters and tensor shapes instead of breaking the container (gguf_fuzz covers that).
//
//   byte 0   the preset: kPresets[byte % size]
//   then     edits of 6 bytes each: op, index, value (int32, little-endian); a shorter tail is
//            ignored. `index` picks a metadata key or a tensor modulo their count.
//     op % 7 = 0  metadata key <- value as int32     4  tensor dim (value & 3) <- value >> 2
//              1  metadata key <- value as uint64    5  tensor type <- value (GgmlType)
//              2  metadata key removed               6  metadata key <- "x" (a string)
//              3  tensor removed
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvengine::model_fuzz {

inline constexpr const char* kPresets[] = {"tiny",       "mistral-tiny", "llama3-tiny",
                                           "qwen2-tiny", "gemma2-tiny",  "gemma3-tiny"};
inline constexpr size_t kNumPresets = sizeof(kPresets) / sizeof(kPresets[0]);

enum class Op : uint8_t {
  kSetI32,
  kSetU64,
  kRemoveKey,
  kRemoveTensor,
  kSetDim,
  kSetType,
  kSetString
};
inline constexpr int kNumOps = 7;

struct Edit {
  Op op = Op::kSetI32;
  uint8_t index = 0;
  int32_t value = 0;
};

struct Input {
  size_t preset = 0;
  std::vector<Edit> edits;
};

inline Input Decode(std::string_view bytes) {
  Input in;
  if (bytes.empty()) return in;
  in.preset = uint8_t(bytes[0]) % kNumPresets;
  for (size_t i = 1; i + 6 <= bytes.size(); i += 6) {
    Edit e;
    e.op = Op(uint8_t(bytes[i]) % kNumOps);
    e.index = uint8_t(bytes[i + 1]);
    uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= uint32_t(uint8_t(bytes[i + 2 + b])) << (8 * b);
    e.value = int32_t(v);
    in.edits.push_back(e);
  }
  return in;
}

inline std::string Encode(const Input& in) {
  std::string s(1, char(in.preset));
  for (const Edit& e : in.edits) {
    s += char(e.op);
    s += char(e.index);
    for (int b = 0; b < 4; ++b) s += char(uint32_t(e.value) >> (8 * b) & 0xFF);
  }
  return s;
}

}  // namespace kvengine::model_fuzz
