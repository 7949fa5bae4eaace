#include "quant/codec_params.h"

#include "quant/half.h"

namespace kvengine::quant_internal {
namespace {

float InverseOrZero(float scale) { return scale > 0.0f ? 1.0f / scale : 0.0f; }

}  // namespace

SymmetricScale MakeSymmetricScale(float amax, float qmax) {
  SymmetricScale s;
  if (!(amax > 0.0f)) return s;  // Also catches NaN, which the callers never pass.
  s.scale_f16 = F32ToF16RoundUp(amax / qmax);
  s.scale = F16ToF32(s.scale_f16);
  s.inv_scale = InverseOrZero(s.scale);
  return s;
}

Int4Params MakeInt4Params(float lo, float hi) {
  if (lo > hi) lo = hi = 0.0f;  // No finite element.
  if (lo == 0.0f) lo = 0.0f;    // -0 -> +0, so the stored min does not depend on element order.
  Int4Params p;
  p.min_f16 = F32ToF16RoundDown(lo);
  p.min = F16ToF32(p.min_f16);
  float range = hi - p.min;
  if (!(range > 0.0f)) range = 0.0f;  // Constant group, or a min clamped above hi.
  p.scale_f16 = range > 0.0f ? F32ToF16RoundUp(range / kInt4QMax) : 0;
  p.scale = F16ToF32(p.scale_f16);
  p.inv_scale = InverseOrZero(p.scale);
  return p;
}

Int4Params LoadInt4Params(const uint8_t* scale, int group) {
  Int4Params p;
  p.scale_f16 = LoadU16(scale + 4 * group);
  p.min_f16 = LoadU16(scale + 4 * group + 2);
  p.scale = F16ToF32(p.scale_f16);
  p.min = F16ToF32(p.min_f16);
  return p;  // inv_scale stays 0: decoding does not need it.
}

}  // namespace kvengine::quant_internal
