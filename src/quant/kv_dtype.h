// The number formats KV rows are stored in, and how many bytes a row of each takes.
//
// A "row" is one token's vector for one KV head (head_dim elements; for MLA, one latent vector).
// Every row is stored as two parts that live in separate arrays of a block (see kv/block_layout.h):
//   data  : the encoded elements, RowFormat::data_bytes
//   scales: per-row (or per-group) scale metadata, RowFormat::scale_bytes (0 for float formats)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvengine/status.h"

namespace kvengine {

// Byte layouts are in quant/codec.h, scale rounding in quant/codec_params.h (f16 scales are rounded
// up, so "amax/448" below means the smallest f16 >= amax/448), error budgets in
// quant/error_budget.h.
enum class KvDtype : uint8_t {
  kF32,      // IEEE binary32; no scales.
  kF16,      // IEEE binary16; no scales.
  kBF16,     // bfloat16 (round to nearest even); no scales.
  kFp8E4M3,  // OCP fp8 e4m3fn (max 448), one f16 scale per row = amax/448, saturating.
  kFp8E5M2,  // OCP fp8 e5m2 (max 57344), one f16 scale per row = amax/57344, saturating.
  kInt8,     // symmetric int8 in [-127, 127], one f16 scale per row = amax/127.
  // Asymmetric uint4 in groups of Int4GroupSize(n) elements; per group an f16 scale and f16 min.
  kInt4,
};

inline constexpr KvDtype kAllKvDtypes[] = {KvDtype::kF32,     KvDtype::kF16,     KvDtype::kBF16,
                                           KvDtype::kFp8E4M3, KvDtype::kFp8E5M2, KvDtype::kInt8,
                                           KvDtype::kInt4};

// "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int4".
std::string_view KvDtypeName(KvDtype dtype);
// Accepts the names above and the aliases people type: "fp32", "float16"/"half", "fp16",
// "fp8" (= fp8_e4m3, as vLLM), "fp8_e4m3fn", "e4m3", "e5m2", "q8"/"q8_0" (= int8), "q4"/"q4_0"
// (= int4). Case-insensitive.
Result<KvDtype> ParseKvDtype(std::string_view name);

// Group size for int4: the largest divisor of n that is <= 32 (32 when n is a multiple of 32).
int Int4GroupSize(int n);

struct RowFormat {
  size_t data_bytes = 0;   // Encoded elements of one row.
  size_t scale_bytes = 0;  // Scale metadata of one row.
  int group_size = 0;      // Elements sharing one scale (n for per-row scales, 0 if none).
};

// Bytes of one row of `n` elements (n >= 1) in `dtype`.
RowFormat RowFormatOf(KvDtype dtype, int n);

}  // namespace kvengine
