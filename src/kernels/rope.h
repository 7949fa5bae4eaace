// Rotary position embedding (RoPE) of query / key heads, in place.
//
// x holds n_heads heads of head_dim floats back to back; the first n_rot dims of each head are
// rotated (the rest are left alone). Pair i (0 <= i < n_rot / 2) is rotated by the angle
//     angle_i = pos * freq_scale * theta^(-2i / n_rot)
// and sits at dims (2i, 2i + 1) in the normal (llama) ordering, or (i, i + n_rot / 2) in the NeoX
// ordering (GPT-NeoX, Qwen, Falcon...):
//     x0' = x0 * cos(angle_i) - x1 * sin(angle_i)
//     x1' = x0 * sin(angle_i) + x1 * cos(angle_i)
// Angles and their cos / sin are computed in double and rounded once to float, so results stay
// within kRopeRelTolerance (kernel_tolerance.h) of the exact rotation at any position
// (llama.cpp computes the angles in float, which drifts by up to ~pos * 2^-24 radians). The
// rotation itself is bit-identical on every kernel target.
#pragma once

#include <cstdint>

namespace kvengine {

struct RopeParams {
  int n_rot = 0;            // Rotated dims per head: even, 2 <= n_rot <= head_dim.
  float theta = 10000.0f;   // Frequency base (rope_freq_base).
  float freq_scale = 1.0f;  // Linear scaling: positions are multiplied by it.
  bool neox = false;        // NeoX pair ordering instead of the normal one.
};

// Largest n_rot supported (the SIMD kernel expands cos / sin on its stack).
inline constexpr int kMaxRopeDims = 1024;

// cos_sin[0, n_rot / 2) = cos(angle_i), cos_sin[n_rot / 2, n_rot) = sin(angle_i) for `pos`: the
// part shared by all heads (queries and keys) at one position. Computed on the caller, no SIMD.
void RopeCosSin(int64_t pos, const RopeParams& p, float* cos_sin);

// Rotates every head of x by precomputed cos_sin (n_rot floats from RopeCosSin).
// Requires 1 <= n_heads, p.n_rot even, 2 <= p.n_rot <= min(head_dim, kMaxRopeDims).
void RopeApply(float* x, int n_heads, int head_dim, const float* cos_sin, const RopeParams& p);

// RopeCosSin(pos) then RopeApply.
void Rope(float* x, int n_heads, int head_dim, int64_t pos, const RopeParams& p);

}  // namespace kvengine
