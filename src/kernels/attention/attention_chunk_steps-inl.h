// Per-target steps of a chunk in the SIMD item kernel (attention_hwy.cc includes this once per
// Highway target through foreach_target.h; not a public header; see the top of
// attention_hwy.cc): step 1, the float scores of a head tile against a chunk's K rows, step 2,
// the online softmax, and step 3, the float value accumulation over its V rows; steps 1 and 3
// over the fused row decoders of attention_rows-inl.h, with their dispatch by head count and KV
// dtype.
//
// Its names are file-local (an anonymous namespace, as they were inside attention_hwy.cc): this
// header has exactly one includer per target, and internal linkage leaves the generated code as
// it was before the split.

#if defined(KVENGINE_ATTENTION_FLOAT_STEPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVENGINE_ATTENTION_FLOAT_STEPS_INL_H_
#undef KVENGINE_ATTENTION_FLOAT_STEPS_INL_H_
#else
#define KVENGINE_ATTENTION_FLOAT_STEPS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_rows-inl.h"
#include "kernels/exp_simd-inl.h"
#include "quant/codec_params.h"
#include "quant/codec_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

constexpr int kChunk = kAttentionChunk;
constexpr int kMaxHeads = 4;                 // Query heads per register tile.
constexpr int kPosTile = kAttentionPosTile;  // A chunk's rows are padded to a multiple of it.
// Positions per score micro-tile of the float steps: kHeads x kScorePos accumulators, the
// kScorePos rows' decoded vectors and a q vector live in registers. AVX-512 has 32: 4 x 4 + 4 +
// 1. The 16-register targets take 4 x 2 (8 + 2 + 1): with 4 x 4 on AVX2 GCC kept a quarter of the
// accumulators on the stack, each multiply-add a load and a store in one chain (int8 at 512
// positions in L2 on Zen 3, 1 thread: 4.6 GB/s).
constexpr int kScorePos = HWY_MAX_BYTES >= 64 ? 4 : 2;
static_assert(kPosTile % kScorePos == 0);
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ------------------------------ transposed lane sums

// v[0, Lanes) -> one vector whose lane i is the sum of v[i]'s lanes (the order of additions is
// fixed per target). v is clobbered.
HWY_INLINE VF TransposeSum(VF* v) {
#if HWY_TARGET == HWY_SCALAR
  return v[0];
#else
  const DF df;
  const hn::Repartition<uint64_t, DF> d64;
  constexpr size_t kLanes = HWY_MAX_BYTES / sizeof(float);
  // Within 128-bit blocks: pairs (a, b) -> [a0+a2, b0+b2, a1+a3, b1+b3].
  for (size_t k = 0; k < kLanes / 2; ++k) {
    const VF a = v[2 * k], b = v[2 * k + 1];
    v[k] = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  }
  // Pairs of those -> per block [A B C D], each the block's sum of one source.
  for (size_t k = 0; k < kLanes / 4; ++k) {
    const auto a = hn::BitCast(d64, v[2 * k]), b = hn::BitCast(d64, v[2 * k + 1]);
    v[k] = hn::BitCast(df, hn::Add(hn::BitCast(df, hn::InterleaveLower(d64, a, b)),
                                   hn::BitCast(df, hn::InterleaveUpper(d64, a, b))));
  }
#if HWY_MAX_BYTES == 32
  // Blocks: [x.b0 + x.b1, y.b0 + y.b1].
  return hn::Add(hn::ConcatLowerLower(df, v[1], v[0]), hn::ConcatUpperUpper(df, v[1], v[0]));
#elif HWY_MAX_BYTES == 64 && HWY_ARCH_X86
  // Four vectors of four blocks: sum blocks pairwise twice with block shuffles.
  for (size_t k = 0; k < 2; ++k) {
    const __m512 a = v[2 * k].raw, b = v[2 * k + 1].raw;
    v[k] = VF{_mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)))};
  }
  const __m512 a = v[0].raw, b = v[1].raw;
  return VF{_mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)))};
#else
  static_assert(HWY_MAX_BYTES == 16, "TransposeSum handles 16, 32 and 64-byte vectors");
  return v[0];
#endif
#endif
}

// ------------------------------ prefetching

// The rows of a chunk ahead (KvPrefetch, attention_kernel.h), a few per micro-tile of scores.
using PrefetchList = KvPrefetch;

// ------------------------------ step 1: scores

// scores[h * kChunk + i] = (q_h . k_i) * scale_i for i < kScorePos, h < kHeads: one micro-tile
// of kHeads x kScorePos accumulators. q: [d / Lanes][kHeads][Lanes] (PartialImpl), d a multiple
// of Lanes.
template <class Row, int kHeads>
HWY_INLINE void ScoreMicroTile(const KvRowRefs* rows, const float* q, size_t d, float* scores) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  constexpr int kAcc = kHeads * kScorePos;
  constexpr size_t kMaxLanesC = HWY_MAX_BYTES / sizeof(float);
  // Accumulators padded to a whole number of reduction groups of Lanes vectors.
  constexpr size_t kPadded = (kAcc + kMaxLanesC - 1) / kMaxLanesC * kMaxLanesC;
  HWY_ALIGN float sums[kPadded];
  Row r[kScorePos];
  for (int i = 0; i < kScorePos; ++i) r[i] = Row::Make(rows[i].k_data, rows[i].k_scale);
  VF acc[kPadded];
  for (size_t a = 0; a < kPadded; ++a) acc[a] = hn::Zero(df);
  constexpr int kVectors = RowVectors<Row>();
  for (size_t j = 0; j < d; j += kVectors * lanes) {
    VF kv[kScorePos][kVectors];
    for (int i = 0; i < kScorePos; ++i) LoadRowVectors(r[i], j, kv[i]);
    for (int v = 0; v < kVectors; ++v) {
      for (int h = 0; h < kHeads; ++h) {
        const VF qv = hn::LoadU(df, q + ((j / lanes + size_t(v)) * kHeads + size_t(h)) * lanes);
        for (int i = 0; i < kScorePos; ++i) {
          acc[h * kScorePos + i] = hn::MulAdd(kv[i][v], qv, acc[h * kScorePos + i]);
        }
      }
    }
  }
  for (size_t a = 0; a < kPadded; a += lanes) hn::Store(TransposeSum(acc + a), df, sums + a);
  for (int h = 0; h < kHeads; ++h) {
    if constexpr (Row::kHasScale) {
      for (int i = 0; i < kScorePos; ++i)
        scores[h * kChunk + i] = sums[h * kScorePos + i] * r[i].scale;
    } else {
      std::memcpy(scores + h * kChunk, sums + h * kScorePos, sizeof(float) * kScorePos);
    }
  }
}

// scores[h][t] = (q_h . k_t) for t < n, h < kHeads (rows padded to a multiple of kPosTile by
// repeating row n - 1); q: [d / Lanes][kHeads][Lanes] (PartialImpl), d a multiple of Lanes.
// Whole micro-tiles: scores past n hold the repeated row's, which the softmax masks.
template <class Row, int kHeads>
void ScoresT(const KvRowRefs* rows, int n, const float* q, size_t d, float* scores,
             const PrefetchList& pf) {
  // Prefetch pf's rows in step with ours (all of them by the last micro-tile).
  const int tiles = (n + kScorePos - 1) / kScorePos;
  const int pf_per_tile = (pf.n + tiles - 1) / tiles;
  int pf_next = 0;
  for (int t0 = 0; t0 < n; t0 += kScorePos) {
    for (int i = 0; i < pf_per_tile; ++i) PrefetchKvRow(pf, pf_next++);
    ScoreMicroTile<Row, kHeads>(rows + t0, q, d, scores + t0);
  }
}

// ------------------------------ step 3: values

// Vector slices of head_dim_v per pass over a chunk's V rows: kSlices x heads accumulators stay
// in registers (16 of AVX-512's 32 for 4 heads; 8 of AVX2's 16), and each broadcast weight feeds
// kSlices multiply-adds.
constexpr int kVSlices = HWY_MAX_BYTES == 64 ? 4 : 2;

// acc[h][j, j + kSlices * Lanes) = acc[h] * alpha[h] + sum_t p[h][t] * v_t over those elements.
template <int kSlices, class Row, int kHeads>
HWY_INLINE void AccumulateSlices(const Row* r, int n, const float* p, const float* alpha, size_t j,
                                 float* acc, size_t acc_stride) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF a[kSlices][kHeads];
  for (int h = 0; h < kHeads; ++h) {
    const VF al = hn::Set(df, alpha[h]);
    for (int k = 0; k < kSlices; ++k) {
      a[k][h] = hn::Mul(hn::LoadU(df, acc + size_t(h) * acc_stride + j + size_t(k) * lanes), al);
    }
  }
  static_assert(kSlices % RowVectors<Row>() == 0);
  for (int t = 0; t < n; ++t) {
    VF v[kSlices];
    for (int k = 0; k < kSlices; k += RowVectors<Row>()) {
      LoadRowVectors(r[t], j + size_t(k) * lanes, v + k);
    }
    for (int h = 0; h < kHeads; ++h) {
      float pw = p[h * kChunk + t];
      if constexpr (Row::kHasScale) pw *= r[t].scale;
      const VF w = hn::Set(df, pw);
      for (int k = 0; k < kSlices; ++k) a[k][h] = hn::MulAdd(w, v[k], a[k][h]);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int k = 0; k < kSlices; ++k) {
      hn::StoreU(a[k][h], df, acc + size_t(h) * acc_stride + j + size_t(k) * lanes);
    }
  }
}

// acc[h][0, d) = acc[h] * alpha[h] + sum_t p[h][t] * v_t for t < n; acc: [kHeads][acc_stride],
// d a multiple of Lanes.
template <class Row, int kHeads>
void AccumulateT(const KvRowRefs* rows, int n, const float* p, const float* alpha, size_t d,
                 float* acc, size_t acc_stride) {
  const size_t lanes = hn::Lanes(DF());
  Row r[kChunk];
  for (int t = 0; t < n; ++t) r[t] = Row::Make(rows[t].v_data, rows[t].v_scale);
  size_t j = 0;
  for (; j + kVSlices * lanes <= d; j += kVSlices * lanes) {
    AccumulateSlices<kVSlices, Row, kHeads>(r, n, p, alpha, j, acc, acc_stride);
  }
  // The rest (d is a multiple of the row's vectors' span).
  constexpr int kTail = RowVectors<Row>();
  for (; j < d; j += kTail * lanes) {
    AccumulateSlices<kTail, Row, kHeads>(r, n, p, alpha, j, acc, acc_stride);
  }
}

using ScoresFn = void (*)(const KvRowRefs*, int, const float*, size_t, float*, const PrefetchList&);
using AccumulateFn = void (*)(const KvRowRefs*, int, const float*, const float*, size_t, float*,
                              size_t);

template <class Row>
ScoresFn ScoresFor(int heads) {
  switch (heads) {
    case 1:
      return &ScoresT<Row, 1>;
    case 2:
      return &ScoresT<Row, 2>;
    case 3:
      return &ScoresT<Row, 3>;
    default:
      return &ScoresT<Row, 4>;
  }
}

template <class Row>
AccumulateFn AccumulateFor(int heads) {
  switch (heads) {
    case 1:
      return &AccumulateT<Row, 1>;
    case 2:
      return &AccumulateT<Row, 2>;
    case 3:
      return &AccumulateT<Row, 3>;
    default:
      return &AccumulateT<Row, 4>;
  }
}

// Calls f.template operator()<Row>() with the fused row decoder of `dtype` (rows decoded into the
// f32 tile first pass kF32).
template <class F>
auto WithRow(KvDtype dtype, const F& f) {
  switch (dtype) {
    case KvDtype::kF32:
      return f.template operator()<F32Row>();
    case KvDtype::kInt4:
      return f.template operator()<Int4Row>();
    case KvDtype::kF16:
      return f.template operator()<F16Row>();
    case KvDtype::kBF16:
      return f.template operator()<Bf16Row>();
    case KvDtype::kFp8E4M3:
      return f.template operator()<Fp8Row<true>>();
    case KvDtype::kFp8E5M2:
      return f.template operator()<Fp8Row<false>>();
    case KvDtype::kInt8:
      return f.template operator()<Int8Row>();
  }
  return f.template operator()<F32Row>();
}

// ------------------------------ step 2: online softmax

// For heads h < heads: s = scores[h][0, n) * scale; m_new = max(m[h], max s); alpha[h] =
// e^(m[h] - m_new); p[h][t] = e^(s_t - m_new) (0 for t >= n up to the padded chunk);
// l[h] = l[h] * alpha[h] + sum p; m[h] = m_new.
void SoftmaxStep(const float* scores, int n, int heads, float scale, float* m, float* l,
                 float* alpha, float* p) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const VF vscale = hn::Set(df, scale);
  const VF neg_inf = hn::Set(df, kNegInf);
  // Pass 1 per head: scaled scores (masked past n) into p, the new maximum.
  HWY_ALIGN float m_new[kMaxHeads];
  for (int h = 0; h < heads; ++h) {
    const float* s = scores + h * kChunk;
    float* ph = p + h * kChunk;
    VF vmax = neg_inf;
    for (size_t t = 0; t < size_t(n); t += lanes) {
      VF v = hn::Mul(hn::LoadU(df, s + t), vscale);
      if (t + lanes > size_t(n)) v = hn::IfThenElse(hn::FirstN(df, size_t(n) - t), v, neg_inf);
      hn::StoreU(v, df, ph + t);
      vmax = hn::Max(vmax, v);
    }
    m_new[h] = std::max(m[h], hn::GetLane(hn::MaxOfLanes(df, vmax)));
  }
  // alpha = e^(m_old - m_new) <= 1 for every head with one vector exponential per Lanes heads (0
  // on the first chunk, where m_old = -inf).
  HWY_ALIGN float diff[kMaxHeads + HWY_MAX_BYTES / sizeof(float)] = {};
  for (int h = 0; h < heads; ++h) diff[h] = m[h] - m_new[h];
  for (size_t h = 0; h < size_t(heads); h += lanes) {
    hn::StoreU(ExpNonPositive(df, hn::LoadU(df, diff + h)), df, diff + h);
  }
  // Pass 2 per head: p = e^(s - m_new), l = l * alpha + sum p.
  for (int h = 0; h < heads; ++h) {
    float* ph = p + h * kChunk;
    alpha[h] = diff[h];
    const VF vm = hn::Set(df, m_new[h]);
    VF sum = hn::Zero(df);
    for (size_t t = 0; t < size_t(n); t += lanes) {
      // s - m_new <= 0 (lanes past n: e^-inf = 0).
      const VF e = ExpNonPositive(df, hn::Sub(hn::LoadU(df, ph + t), vm));
      hn::StoreU(e, df, ph + t);
      sum = hn::Add(sum, e);
    }
    l[h] = l[h] * alpha[h] + hn::GetLane(hn::SumOfLanes(df, sum));
    m[h] = m_new[h];
  }
}

}  // namespace
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
