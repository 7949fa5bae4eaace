// llama.cpp's CPU rounding where it changes logits beyond f32 noise: RoPE angles in f32 and flash
// attention over an f16 KV cache. Used only by ForwardNumerics::kLlamaCppCpu (decoder_model.h), so
// that a model can be compared with llama.cpp's logits (runtime/quant_golden_test.cc); the engine
// never runs it. Scalar, one query head at a time.
//
// Why it matters: llama.cpp rounds the query and its running attention sum to f16 (below). Those
// roundings move attention outputs by ~1e-4, and the next matmul's q8 activation rounding turns
// that into whole flipped codes: on the quant/ test models, logits up to 0.14 away from exact f32
// attention, no position after the first agreeing. With these roundings 69 of 150 positions agree
// to 1e-4 and every weight type is within 0.1 (docs/runtime.md, "Checked against llama.cpp").
//
// Flash attention (llama.cpp's default, flash_attn "auto", resolves to it on CPU; ggml's
// flash_attn_ext row kernel, which runs whenever a batch has fewer query rows than its 64-row
// tile), per query row and head, K and V f16:
//   q16 = f16(q)                                    once
//   per visible position t, ascending:
//     s = scale * (q16 . k_t)                       f32
//     if s > M:  ms = exp(M - s), M = s, acc = f16(acc * ms), w = 1
//     else:      ms = 1, w = exp(s - M)
//     acc = f16(fma(v_t, w, acc))                   the V accumulator is f16, rounded every step
//     S = S * ms + w                                f32
//   out = f32(acc) / S
// Both roundings are needed: either one alone agrees with llama.cpp at no position.
//
// RoPE: ggml computes the angle of pair i as pos * theta_scale^i by repeated f32 multiplication
// (theta_scale = powf(base, -2 / n_rot)), each divided by its frequency factor and times
// freq_scale, then cosf / sinf: a few ulps from the double-precision angles of RopeCosSin, which
// flips f16 roundings of q and k. YaRN's extrapolation mix (ext_factor) is not modelled; the
// runtime supports no YaRN model.
//
// Dot products here sum in ascending element order where ggml sums SIMD lanes as a tree: they
// differ by f32 rounding only (modelling the AVX-512 lane order agreed at 3 fewer positions of
// 150, within the noise).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention/paged_attention.h"
#include "base/thread_pool.h"
#include "model/decoder_arch.h"

namespace kvengine {

// As LayerRopeCosSin (decoder_model.h): cos_sin[0, n_rot / 2) = cos, [n_rot / 2, n_rot) = sin.
void LlamaCppRopeCosSin(int64_t pos, const LayerRope& rope, float* cos_sin);

// As PagedAttentionBatch (same arguments and layouts); cap > 0 soft-caps the scores as
// SoftCappedAttentionBatch (s = cap * tanh(s / cap)), 0 does not. K and V must be f16 (KV_CHECK):
// llama.cpp's other KV types round differently (a q8_0 K quantizes the query to q8_0).
void LlamaCppFlashAttentionBatch(const KvLayerView& kv, std::span<const AttentionQuery> queries,
                                 int n_heads, float scale, float cap, ThreadPool* pool);

}  // namespace kvengine
