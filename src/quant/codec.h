// Row codecs: encode one KV row of n floats into a dtype's data and scale bytes, decode it back,
// and the two fused kernels attention over quantized KV is built from (dot with a query, accumulate
// a weighted row).
//
// Layout of one encoded row (byte counts from RowFormatOf(dtype, n), kv_dtype.h):
//   f32      data: n x binary32                         scale: none (nullptr is fine)
//   f16      data: n x binary16                         scale: none
//   bf16     data: n x bfloat16                         scale: none
//   fp8_*    data: n x fp8 code                         scale: 1 x f16, x = fp8(code) * scale
//   int8     data: n x int8 in [-127, 127]              scale: 1 x f16, x = code * scale
//   int4     data: ceil(n/2) bytes; element 2i in the low nibble of byte i, element 2i+1 in the
//            high nibble; when n is odd the last high nibble is 0.
//            scale: per group of g = Int4GroupSize(n) elements, 4 bytes: f16 scale then f16 min;
//            x = min + code * scale, code in [0, 15].
// Multi-byte values are in host byte order (little-endian). Pointers need no alignment. How scales
// are chosen is in codec_params.h; the error each format may introduce is in error_budget.h.
//
// Non-finite input never causes undefined behaviour: f32/f16/bf16 keep inf and NaN (f16 and bf16
// overflow to inf beyond their range); fp8 saturates inf to +-max and keeps NaN as NaN; int8 and
// int4 have no NaN code and encode NaN as code 0 (int8: 0; int4: the group min) and inf as the
// extreme code. Scales only look at finite elements.
//
// EncodeRow/DecodeRow/DotRow/AxpyRow use the best SIMD target this CPU supports (Highway dynamic
// dispatch, chosen once; on x86 AVX3, AVX2, SSE4, SSSE3 and a baseline: EMU128 with clang, SCALAR
// with GCC 12). Encodings are bit-identical to the scalar reference in codec_ref.h on every
// target, for every input including NaN payloads, and so are decoded values (DecodeRow, and the
// decoded operand inside DotRow / AxpyRow); there are no exceptions. DotRow and AxpyRow differ
// from the reference only by summation order and fused multiply-adds, within kDotRowRelTolerance
// / kAxpyRowRelTolerance (error_budget.h). All functions are thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/kv_dtype.h"

namespace kvengine {

// x: n floats; data: RowFormatOf(dtype, n).data_bytes; scale: .scale_bytes (may be nullptr when 0).
// Requires n >= 1.
void EncodeRow(KvDtype dtype, const float* x, int n, uint8_t* data, uint8_t* scale);

// out: n floats, the decoded row.
void DecodeRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n, float* out);

// Returns sum_i decoded[i] * q[i] without materializing the decoded row.
float DotRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, const float* q, int n);

// acc[i] += a * decoded[i] for i < n.
void AxpyRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, float a, int n, float* acc);

// One set of the four kernels, compiled for one instruction set. For tests and benchmarks that
// compare targets; production code calls the functions above.
struct RowCodecKernels {
  const char* target_name = "";  // Highway's name ("AVX3", "AVX2", "SSE4", "EMU128"...) or "ref".
  int64_t hwy_target = 0;        // Highway target bit (HWY_AVX2...), 0 for the scalar reference.
  void (*encode)(KvDtype, const float*, int, uint8_t*, uint8_t*) = nullptr;
  void (*decode)(KvDtype, const uint8_t*, const uint8_t*, int, float*) = nullptr;
  float (*dot)(KvDtype, const uint8_t*, const uint8_t*, const float*, int) = nullptr;
  void (*axpy)(KvDtype, const uint8_t*, const uint8_t*, float, int, float*) = nullptr;
};

// The kernels the functions above use.
const RowCodecKernels& DefaultRowCodecKernels();
// Every compiled SIMD target that this CPU can run, best first (always at least one). It briefly
// overrides Highway's process-wide target choice (hwy::SetSupportedTargetsForTest), so call it
// from tests and benchmarks only, not while other threads dispatch Highway code.
std::vector<RowCodecKernels> AvailableRowCodecKernels();
// The scalar reference (codec_ref.h) as a kernel set.
RowCodecKernels ReferenceRowCodecKernels();

}  // namespace kvengine
