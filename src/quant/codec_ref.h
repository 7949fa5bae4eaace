// The scalar reference row codecs: same signatures and semantics as codec.h, written element by
// element from the format definitions in half.h and the scale policy in codec_params.h. They are
// the specification the SIMD codecs are tested against, and the fallback that always works.
//
// DotRow accumulates in double (so it is also a good "exact" answer to compare against); AxpyRow
// computes acc[i] + a * decoded[i] with two roundings (no fused multiply-add).
#pragma once

#include <cstdint>

#include "quant/kv_dtype.h"

namespace kvengine::ref {

void EncodeRow(KvDtype dtype, const float* x, int n, uint8_t* data, uint8_t* scale);
void DecodeRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, int n, float* out);
float DotRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, const float* q, int n);
void AxpyRow(KvDtype dtype, const uint8_t* data, const uint8_t* scale, float a, int n, float* acc);

}  // namespace kvengine::ref
