// Internal: dot-product steps that attention_hwy.cc's item kernel runs in place of its float steps
// 1 (scores) and 3 (values) for some KV dtypes, with arithmetic narrower than f32 multiply-adds:
//   * int8 K and V through int16 dot products (attention_int16.h);
//   * fp8 K and V through bf16 dot products (attention_bf16.h);
//   * int4 K scores through int8 dot products (attention_int4.h; V through the float step).
// The online softmax (step 2) stays in float. Each set of steps documents its arithmetic and has a
// scalar specification that tests hold its SIMD versions to.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention/attention_kernel.h"

namespace kvengine {

// One implementation of the steps for one KV dtype.
struct LowPrecisionSteps {
  const char* name = "";  // "vnni", "avx2", "scalar", "avx512_bf16", ...
  // q16[0, d) and *scale for one query head (the steps' own encoding of q: int16 codes and their
  // scale, or bf16 bits in the steps' element order and 1).
  void (*quantize_query)(const float* q, size_t d, int16_t* q16, float* scale) = nullptr;
  // scores[h][t] = score_t of head h for h < heads <= 4, t < n <= kAttentionChunk (rows padded to
  // a multiple of kAttentionPosTile by repeating row n - 1; scores past n are unspecified);
  // run_starts: the rows' runs (ItemRowWalker::Next: rows of one run have adjacent scales); q16:
  // [heads][d]; scores: [heads][kAttentionChunk]. Prefetches pf's rows along the way (speed only).
  void (*scores)(const KvRowRefs* rows, int n, uint64_t run_starts, const int16_t* q16,
                 const float* q_scale, int heads, size_t d, float* scores,
                 const KvPrefetch& pf) = nullptr;
  // acc[h] = acc[h] * alpha[h] + sum_t p[h][t] * v_t (in the steps' arithmetic) for h < heads <= 4
  // over rows t < n (above); p: [heads][kAttentionChunk] (only t < n read); acc:
  // [heads][acc_stride], elements in `element` order. l[h] (the softmax's running sum, already
  // counting this chunk's p) may move by what the steps' rounding of the weights changed of
  // sum_t p[h][t], so that acc / l stays a convex combination of V rows. nullptr: V goes through
  // the float value step (scores-only steps, such as int4's).
  void (*accumulate)(const KvRowRefs* rows, int n, uint64_t run_starts, const float* p,
                     const float* alpha, int heads, size_t d, float* acc, size_t acc_stride,
                     float* l) = nullptr;
  // The row element held at accumulator index i (with accumulate only).
  size_t (*element)(size_t i) = nullptr;
};

// f.template operator()<H>() with H = heads for 1 <= heads <= 4 (4 for more): the
// implementations' step templates take the head count as a constant.
template <class F>
void ForHeads(int heads, const F& f) {
  switch (heads) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    default:
      return f.template operator()<4>();
  }
}

}  // namespace kvengine
