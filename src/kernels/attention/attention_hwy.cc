// The SIMD item kernel of decode attention (attention_kernel.h), compiled once per Highway target.
//
// Per chunk of up to kAttentionChunk positions, per KV head of the item in turn (a unit: the
// unit is also what is prefetched ahead), and per tile of up to 4 query heads of its group:
//   1. Scores: K rows in micro-tiles of kScorePos positions; for each vector-wide slice of head_dim
//      (two for int4), decode the slice of each row once (registers; the row decoders of
//      attention_rows-inl.h) and multiply-add it into one accumulator per
//      (head, position) -- kHeads x kScorePos independent chains. The accumulators' lanes are then
//      summed by a transposed reduction tree (TransposeSum: Lanes(d) accumulators -> one vector
//      whose lane i is the sum of accumulator i), so there is no horizontal sum per dot product.
//   2. Online softmax per head on the chunk's scores: new max, p = e^(s - m) (ExpNonPositive from
//      kernels/exp_simd-inl.h), l = l * alpha + sum p with alpha = e^(m_old - m_new).
//   3. Values: for each kVSlices vector-wide slices of head_dim_v, the heads' accumulators are
//      loaded once, scaled by alpha, and every V row of the chunk is decoded once and
//      multiply-added into all of them (kVSlices x heads independent chains), then stored back.
// K rows of a chunk (64 x 256 bytes for f16, d = 128) stay in L1 between head tiles, so a group
// of more than 4 heads decodes them again but reads memory once. The steps of a chunk (the float
// ones of 1 and 3; the integer and bf16 ones are attention_steps.h's) are in
// attention_chunk_steps-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention/attention_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/attention/attention_bf16.h"
#include "kernels/attention/attention_chunk_steps-inl.h"
#include "kernels/attention/attention_int16.h"
#include "kernels/attention/attention_int4.h"
#include "kernels/attention/attention_kernel.h"
#include "kernels/attention/attention_rows-inl.h"
#include "kvengine/status.h"
#include "base/strings.h"
#include "hwy/highway.h"
#include "quant/codec.h"
#include "quant/codec_params.h"
#include "quant/codec_simd-inl.h"
#include "quant/half.h"

HWY_BEFORE_NAMESPACE();
namespace kvengine::HWY_NAMESPACE {
namespace {

// Prefetch distance: while a unit is computed, the rows of the unit about kPrefetchBytes of KV
// ahead (at least 1, at most kMaxPrefetchChunks units) are requested into L1 or L2
// (KvPrefetchLevel, attention_kernel.h). Measured on Zen 5 into L1 at 32k, d = 128, paged (block
// 16, shuffled), 1 thread, chunks of 32: int8 8.9 ms per call with the next chunk only (8 KiB
// ahead), 7.4 two chunks, 6.7-7.1 with 24-48 KiB; f16 flat within noise from 16 to 96 KiB. On
// Zen 4 into L2, chunks of 64: 32-48 KiB best for both, 160 KiB 10-15% slower for f16. The
// contiguous layout needs it too: without, 7.6 -> 14.5 ms f16 and 4.8 -> 6.2 ms int8. (Those
// were one-head items, whose units are chunks. With all 8 heads per item on Zen 3, 96 KiB was no
// better than 48 for int8 and slower for f16, 2026-12-02.)
constexpr size_t kPrefetchBytes = 48 << 10;
constexpr int kMaxPrefetchChunks = 8;

// ------------------------------ the item

struct Scratch {
  std::vector<float> q;        // group x dk_pad, zero padded, in head tiles (float steps only)
  std::vector<int16_t> q16;    // [group][dk] (int16 steps: q quantized per head, attention_int16.h)
  std::vector<float> q_scale;  // [group] (int16 steps)
  std::vector<float> acc;      // [group][dv_pad]
  std::vector<float> ktile;    // [kChunk][dk_pad] decoded K (ragged head dims only)
  std::vector<float> vtile;    // [kChunk][dv_pad] decoded V (idem)
  std::vector<float> kparams;  // Int4Row's group parameters of a chunk's K rows (int4 only)
  std::vector<float> vparams;  // idem, V
  std::vector<uint32_t> element;  // The steps' accumulator order (LowPrecisionSteps::element).
};

size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

// Floats of a chunk's Int4Row parameters for rows of d elements (d / 32 groups, 2 each), with
// room for DecodeF16Params's last vector.
size_t Int4ParamsFloats(size_t d) { return size_t(kChunk) * (d / 16) + 16; }

// Decodes the int4 group parameters of rows[0, n) (`groups` per row) into params, row t's at
// params + t * 2 * groups, and points rows[t].*kField there (Int4Row reads f32 parameters). A
// run of rows (ItemRowWalker::Next's run_starts) has adjacent scale bytes: one conversion.
template <const uint8_t* KvRowRefs::*kField>
void DecodeInt4Params(KvRowRefs* rows, int n, uint64_t run_starts, size_t groups, float* params) {
  const size_t per_row = 2 * groups;
  for (int a = 0; a < n;) {
    const uint64_t later = a + 1 < 64 ? run_starts >> (a + 1) : 0;
    const int b = later == 0 ? n : std::min(n, a + 1 + std::countr_zero(later));
    DecodeF16Params(rows[a].*kField, size_t(b - a) * per_row, params + size_t(a) * per_row);
    for (int t = a; t < b; ++t) {
      rows[t].*kField = reinterpret_cast<const uint8_t*>(params + size_t(t) * per_row);
    }
    a = b;
  }
}

// The rows of an item's units, a unit being (chunk, KV head) in the order the kernel computes
// them: chunk 0's KV heads in turn, then chunk 1's, ... The walker yields a chunk's rows for the
// item's first KV head; the other heads' rows are those shifted by HeadStride. After the item's
// last chunk every unit is empty (n == 0).
class UnitRows {
 public:
  UnitRows(const KvLayerView& kv, const AttentionItem& item)
      : walk_(kv, item), stride_(HeadStride(kv)), heads_(item.kv_heads) {}
  // Fills rows[0, n) (room for kChunk + kPosTile - 1) with the next unit's rows and *run_starts
  // with their runs (ItemRowWalker::Next); returns n.
  int Next(KvRowRefs* rows, uint64_t* run_starts) {
    if (head_ == 0) {
      n_ = int(std::min<int64_t>(kChunk, walk_.remaining()));
      walk_.Next(n_, base_, &starts_);
    }
    for (int t = 0; t < n_; ++t) rows[t] = Advance(base_[t], stride_, size_t(head_));
    *run_starts = starts_;
    head_ = head_ + 1 == heads_ ? 0 : head_ + 1;
    return n_;
  }

 private:
  ItemRowWalker walk_;
  KvRowStrides stride_;  // HeadStride
  int heads_;
  int head_ = 0;  // The KV head (of the item's) of the next unit.
  int n_ = 0;     // Rows of the current chunk.
  uint64_t starts_ = 0;
  KvRowRefs base_[kChunk];  // The current chunk's rows of the first KV head.
};

// What an item's shape makes of the kernel: the head dims padded to whole vectors and which rows
// take the fused decoders, the fused int4 decoder (with its group parameters decoded per chunk)
// or the f32 tiles.
struct ItemPlan {
  size_t dk, dv;          // Head dims of K and V.
  size_t dk_pad, dv_pad;  // Those rounded up to whole vectors.
  int group, kv_heads;
  size_t q_heads;       // Query heads of the item.
  bool steps_values;    // The steps' value step, or the float one (scores-only steps).
  bool k_int4, v_int4;  // Rows through the fused int4 decoder.
  bool k_tile, v_tile;  // Rows decoded into the f32 tiles first.
};

HWY_INLINE ItemPlan PlanItem(const KvLayerView& kv, const AttentionItem& item,
                             const LowPrecisionSteps* steps) {
  const size_t lanes = hn::Lanes(DF());
  ItemPlan plan;
  plan.dk = size_t(kv.head_dim_k);
  plan.dv = size_t(kv.head_dim_v);
  plan.dk_pad = RoundUp(plan.dk, lanes);
  plan.dv_pad = RoundUp(plan.dv, lanes);
  plan.group = item.group;
  plan.kv_heads = item.kv_heads;
  plan.q_heads = size_t(plan.kv_heads) * size_t(plan.group);
  // Fused decode when whole loads of the row decoder (RowVectors x Lanes elements) cover the
  // row (int4: where its groups are 32 elements, a whole number of Int4Row's blocks); else decode
  // rows into the f32 tiles.
  static_assert(32 % (2 * kMaxLanes) == 0);
  plan.steps_values = steps != nullptr && steps->accumulate != nullptr;
  plan.k_int4 = steps == nullptr && kv.k_dtype == KvDtype::kInt4 && plan.dk % 32 == 0;
  plan.v_int4 = !plan.steps_values && kv.v_dtype == KvDtype::kInt4 && plan.dv % 32 == 0;
  const auto load_span = [lanes](KvDtype dtype) {
    return lanes * size_t(WithRow(dtype, []<class Row>() { return RowVectors<Row>(); }));
  };
  plan.k_tile = steps == nullptr && ((kv.k_dtype == KvDtype::kInt4 && !plan.k_int4) ||
                                     plan.dk % load_span(kv.k_dtype) != 0);
  plan.v_tile = !plan.steps_values && ((kv.v_dtype == KvDtype::kInt4 && !plan.v_int4) ||
                                       plan.dv % load_span(kv.v_dtype) != 0);
  return plan;
}

// q in the float score step's layout: per KV head and head tile of up to kMaxHeads of its query
// heads (h0 = 0, 4, ..), [dk_pad / lanes][heads][lanes] at (kv head * group + h0) * dk_pad (one
// pointer and constant offsets reach every head's slice), elements in the K row decoder's order
// (Int4Row's for fused int4).
HWY_INLINE void TileQuery(const ItemPlan& plan, const float* q, std::vector<float>& tiled) {
  const size_t lanes = hn::Lanes(DF());
  const int group = plan.group;
  tiled.assign(plan.q_heads * plan.dk_pad, 0.0f);
  for (size_t qh = 0; qh < plan.q_heads; ++qh) {
    const int g = int(qh % size_t(group));
    const int h0 = g / kMaxHeads * kMaxHeads, heads = std::min(kMaxHeads, group - h0);
    const float* src = q + qh * plan.dk;
    float* tile = tiled.data() + (qh - size_t(g - h0)) * plan.dk_pad + size_t(g - h0) * lanes;
    for (size_t i = 0; i < plan.dk; ++i) {
      tile[(i / lanes * size_t(heads)) * lanes + i % lanes] =
          src[plan.k_int4 ? Int4RowElement(i, lanes) : i];
    }
  }
}

// Sizes the scratch for the item and puts its q in the steps' encoding (per head) or the float
// score step's layout (TileQuery).
HWY_INLINE void PrepareScratch(const ItemPlan& plan, const AttentionItem& item,
                               const LowPrecisionSteps* steps, Scratch& sc) {
  sc.acc.assign(plan.q_heads * plan.dv_pad, 0.0f);
  if (plan.k_tile) sc.ktile.assign(size_t(kChunk) * plan.dk_pad, 0.0f);
  if (plan.v_tile) sc.vtile.assign(size_t(kChunk) * plan.dv_pad, 0.0f);
  if (plan.k_int4) sc.kparams.resize(Int4ParamsFloats(plan.dk));
  if (plan.v_int4) sc.vparams.resize(Int4ParamsFloats(plan.dv));
  if (steps != nullptr) {  // q in the steps' encoding, per head.
    sc.q16.resize(plan.q_heads * plan.dk);
    sc.q_scale.resize(plan.q_heads);
    for (size_t g = 0; g < plan.q_heads; ++g) {
      steps->quantize_query(item.q + g * plan.dk, plan.dk, sc.q16.data() + g * plan.dk,
                            &sc.q_scale[g]);
    }
  } else {
    TileQuery(plan, item.q, sc.q);
  }
}

// Every KV head's m = -inf and l = 0 in the partial state (PartialStateFloats apart).
HWY_INLINE void InitState(const ItemPlan& plan, size_t state_stride, float* state) {
  const int group = plan.group;
  for (int j = 0; j < plan.kv_heads; ++j) {
    float* st = state + size_t(j) * state_stride;
    for (int g = 0; g < group; ++g) {
      st[g] = kNegInf;       // m
      st[group + g] = 0.0f;  // l
    }
  }
}

// Readies a unit's rows for the steps: the fused int4 decoder's group parameters, or the rows
// decoded into the f32 tiles (the rows then point at the copies); the rows padded to whole score
// micro-tiles; with v_into_l1 the V rows requested into L1.
HWY_INLINE void PrepareUnitRows(const KvLayerView& kv, const ItemPlan& plan, bool v_into_l1,
                                KvRowRefs* rows, int n, uint64_t starts, Scratch& sc) {
  if (plan.k_int4) {
    DecodeInt4Params<&KvRowRefs::k_scale>(rows, n, starts, plan.dk / 32, sc.kparams.data());
  }
  if (plan.v_int4) {
    DecodeInt4Params<&KvRowRefs::v_scale>(rows, n, starts, plan.dv / 32, sc.vparams.data());
  }
  for (int t = 0; t < n; ++t) {  // Tiles: decode, then point the rows at the f32 copies.
    if (plan.k_tile) {
      float* dst = sc.ktile.data() + size_t(t) * plan.dk_pad;
      DecodeRow(kv.k_dtype, rows[t].k_data, rows[t].k_scale, int(plan.dk), dst);
      rows[t].k_data = reinterpret_cast<const uint8_t*>(dst);
    }
    if (plan.v_tile) {
      float* dst = sc.vtile.data() + size_t(t) * plan.dv_pad;
      DecodeRow(kv.v_dtype, rows[t].v_data, rows[t].v_scale, int(plan.dv), dst);
      rows[t].v_data = reinterpret_cast<const uint8_t*>(dst);
    }
  }
  for (int t = n; t % kPosTile != 0; ++t) rows[t] = rows[n - 1];  // Whole score micro-tiles.
  if (v_into_l1) {
    for (int t = 0; t < n; ++t) PrefetchBytes<3>(rows[t].v_data, kv.v_row_bytes);
  }
}

// The float steps' functions per head count (index heads - 1), for the rows' decoders (f32 where
// they go through the tiles).
struct FloatSteps {
  ScoresFn scores[kMaxHeads];
  AccumulateFn accumulate[kMaxHeads];
};

HWY_INLINE FloatSteps FloatStepsFor(const KvLayerView& kv, const ItemPlan& plan) {
  FloatSteps fs;
  for (int h = 1; h <= kMaxHeads; ++h) {
    fs.scores[h - 1] = WithRow(plan.k_tile ? KvDtype::kF32 : kv.k_dtype,
                               [h]<class Row>() { return ScoresFor<Row>(h); });
    fs.accumulate[h - 1] = WithRow(plan.v_tile ? KvDtype::kF32 : kv.v_dtype,
                                   [h]<class Row>() { return AccumulateFor<Row>(h); });
  }
  return fs;
}

// Steps 1 to 3 of one unit (rows[0, n) of one KV head, whose first query head in the item is
// head0) for each head tile of its group, updating the head's m and l and its accumulators.
HWY_INLINE void UnitHeadTiles(const ItemPlan& plan, const LowPrecisionSteps* steps,
                              const FloatSteps& fs, float scale, const KvRowRefs* rows, int n,
                              uint64_t starts, size_t head0, const PrefetchList& pf, float* m,
                              float* l, Scratch& sc, float* scores, float* p, float* alpha) {
  const int group = plan.group;
  const size_t dk = plan.dk, dk_pad = plan.dk_pad, dv = plan.dv, dv_pad = plan.dv_pad;
  for (int h0 = 0; h0 < group; h0 += kMaxHeads) {
    const int heads = std::min(kMaxHeads, group - h0);
    const size_t qh = head0 + size_t(h0);  // The tile's first query head in the item.
    // The first head tile prefetches, all while computing scores (spreading half of it over
    // the V step was slower paged: 7.4 -> 9.4 ms f16, 6.6 -> 7.7 ms int8, 1 thread).
    const PrefetchList pf_scores = h0 == 0 ? pf : PrefetchList{};
    if (steps != nullptr) {
      steps->scores(rows, n, starts, sc.q16.data() + qh * dk, sc.q_scale.data() + qh, heads, dk,
                    scores, pf_scores);
    } else {
      fs.scores[heads - 1](rows, n, sc.q.data() + qh * dk_pad, dk_pad, scores, pf_scores);
    }
    SoftmaxStep(scores, n, heads, scale, m + h0, l + h0, alpha, p);
    if (plan.steps_values) {
      steps->accumulate(rows, n, starts, p, alpha, heads, dv, sc.acc.data() + qh * dv_pad, dv_pad,
                        l + h0);
    } else {
      fs.accumulate[heads - 1](rows, n, p, alpha, dv_pad, sc.acc.data() + qh * dv_pad, dv_pad);
    }
  }
}

// Copies the accumulators into the partial state, in row element order (un-permuting the steps'
// `element` order or the fused int4 decoder's).
HWY_INLINE void StoreAccumulators(const ItemPlan& plan, const LowPrecisionSteps* steps,
                                  size_t state_stride, Scratch& sc, float* state) {
  const size_t lanes = hn::Lanes(DF());
  const size_t dv = plan.dv;
  if (plan.steps_values) {  // One call per element, not per element and head.
    sc.element.resize(dv);
    for (size_t i = 0; i < dv; ++i) sc.element[i] = uint32_t(steps->element(i));
  }
  for (size_t qh = 0; qh < plan.q_heads; ++qh) {
    const size_t j = qh / size_t(plan.group), g = qh % size_t(plan.group);
    float* acc = state + j * state_stride + 2 * size_t(plan.group) + g * dv;
    const float* src = sc.acc.data() + qh * plan.dv_pad;
    if (plan.steps_values) {
      for (size_t i = 0; i < dv; ++i) acc[sc.element[i]] = src[i];
    } else if (plan.v_int4) {
      for (size_t i = 0; i < dv; ++i) acc[Int4RowElement(i, lanes)] = src[i];
    } else {
      std::memcpy(acc, src, dv * sizeof(float));
    }
  }
}

// steps: K and V through these steps instead of the float ones (attention_steps.h: int16 for int8
// KV, bf16 for fp8, int8 scores for int4 K; the caller checks that they apply), whose accumulators
// are in their `element` order; V through the float step where they have no value step; nullptr:
// the float steps.
void PartialImpl(const KvLayerView& kv, const AttentionItem& item, KvPrefetchLevel prefetch,
                 const LowPrecisionSteps* steps, float* state) {
  const ItemPlan plan = PlanItem(kv, item, steps);
  const int group = plan.group;
  const int kv_heads = plan.kv_heads;

  thread_local Scratch scratch;  // Grows to the largest shape seen; no allocation after that.
  Scratch& sc = scratch;
  PrepareScratch(plan, item, steps, sc);
  const size_t state_stride = PartialStateFloats(group, kv.head_dim_v);
  InitState(plan, state_stride, state);
  const FloatSteps fs = FloatStepsFor(kv, plan);

  // With the units ahead requested into L2, the float value step would read a unit's V rows
  // from there, which its accumulation chains overlap less well than the score step does; so
  // they are requested into L1 before the unit's scores. Measured: f16 at 32k paged 4-7% faster
  // from memory, 5-7% slower with the KV in L3; the integer and bf16 value steps were 2-3%
  // slower with it, so they go without (docs/bench-attention.md).
  const bool v_into_l1 = prefetch == KvPrefetchLevel::kL2 && !plan.steps_values;
  // Rows of units u .. u + ahead in a ring of ahead + 1 buffers: unit u is computed while the
  // rows of unit u + ahead are prefetched (the ones in between were requested earlier).
  const size_t unit_bytes = size_t(kChunk) * (kv.k_row_bytes + kv.v_row_bytes);
  const int ahead = int(std::clamp<size_t>(kPrefetchBytes / unit_bytes, 1, kMaxPrefetchChunks));
  const int ring = ahead + 1;
  UnitRows units(kv, item);
  KvRowRefs row_bufs[kMaxPrefetchChunks + 1][kChunk + kPosTile - 1];
  int row_counts[kMaxPrefetchChunks + 1] = {};
  uint64_t run_starts[kMaxPrefetchChunks + 1] = {};  // ItemRowWalker::Next's (int16 scales).
  HWY_ALIGN float scores[kMaxHeads * kChunk];
  HWY_ALIGN float p[kMaxHeads * kChunk];
  float alpha[kMaxHeads];
  const PrefetchList pf_rows{nullptr,
                             0,
                             kv.k_row_bytes,
                             kv.v_row_bytes,
                             kv.k_scale_bytes != 0,
                             kv.v_scale_bytes != 0,
                             prefetch == KvPrefetchLevel::kL2};
  for (int u = 0; u < ahead; ++u) {
    row_counts[u] = units.Next(row_bufs[u], &run_starts[u]);
    if (u > 0) {  // Unit 0 is needed now; request the rest at once.
      PrefetchList pf = pf_rows;
      pf.rows = row_bufs[u];
      pf.n = row_counts[u];
      for (int t = 0; t < pf.n; ++t) PrefetchKvRow(pf, t);
    }
  }
  for (int u = 0; row_counts[u % ring] > 0; ++u) {
    const int n = row_counts[u % ring];
    KvRowRefs* rows = row_bufs[u % ring];
    const uint64_t starts = run_starts[u % ring];
    const size_t head0 = size_t(u % kv_heads) * size_t(group);  // The unit's first query head.
    const int later = (u + ahead) % ring;
    row_counts[later] = units.Next(row_bufs[later], &run_starts[later]);
    PrefetchList pf = pf_rows;
    if (row_counts[later] > 0) {
      pf.rows = row_bufs[later];
      pf.n = row_counts[later];
    }
    PrepareUnitRows(kv, plan, v_into_l1, rows, n, starts, sc);
    float* st = state + size_t(u % kv_heads) * state_stride;
    UnitHeadTiles(plan, steps, fs, item.scale, rows, n, starts, head0, pf, /*m=*/st,
                  /*l=*/st + group, sc, scores, p, alpha);
  }
  StoreAccumulators(plan, steps, state_stride, sc, state);
}

void PartialT(const KvLayerView& kv, const AttentionItem& item, KvPrefetchLevel prefetch,
              float* state) {
  PartialImpl(kv, item, prefetch, nullptr, state);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// The int16 steps this target's kernel takes for int8 KV: AVX-512 VNNI's on the AVX3 target where
// the CPU has it, else AVX2's (any CPU that runs these targets runs them); nullptr if none.
const LowPrecisionSteps* Int16StepsOfTarget() {
#if HWY_TARGET == HWY_AVX3
  if (const LowPrecisionSteps* vnni = Int8StepsAvx512Vnni()) return vnni;
#endif
  return Int8StepsAvx2();
}

// The bf16 steps this target's kernel takes for fp8 KV of `dtype`: AVX-512 BF16's on the AVX3
// target where the CPU has it; nullptr if none.
const LowPrecisionSteps* Bf16StepsOfTarget(KvDtype dtype) {
#if HWY_TARGET == HWY_AVX3
  return Fp8StepsAvx512Bf16(dtype);
#else
  (void)dtype;
  return nullptr;
#endif
}

// The int4 steps this target's kernel takes (with the value step: `values`): AVX-512 VNNI's on
// the AVX3 target where the CPU has it; nullptr if none.
const LowPrecisionSteps* Int4StepsOfTarget(bool values) {
#if HWY_TARGET == HWY_AVX3
  return Int4StepsAvx512Vnni(values);
#else
  (void)values;
  return nullptr;
#endif
}

// The int16 steps for int8 KV, the bf16 steps for fp8 and the int4 steps for int4 K (and V)
// where they apply (and this target has them), else the float steps.
void PartialLowPrecision(const KvLayerView& kv, const AttentionItem& item, KvPrefetchLevel prefetch,
                         float* state) {
  static const LowPrecisionSteps* const int16 = Int16StepsOfTarget();
  static const LowPrecisionSteps* const e4m3 = Bf16StepsOfTarget(KvDtype::kFp8E4M3);
  static const LowPrecisionSteps* const e5m2 = Bf16StepsOfTarget(KvDtype::kFp8E5M2);
  static const LowPrecisionSteps* const int4_k = Int4StepsOfTarget(false);
  static const LowPrecisionSteps* const int4_kv = Int4StepsOfTarget(true);
  const LowPrecisionSteps* steps = nullptr;
  if (Int8Int16Applies(kv)) {
    steps = int16;
  } else if (Fp8Bf16Applies(kv)) {
    steps = kv.k_dtype == KvDtype::kFp8E4M3 ? e4m3 : e5m2;
  } else if (Int4Int8Applies(kv)) {
    steps = Int4Int8ValuesApply(kv) ? int4_kv : int4_k;
  }
  PartialImpl(kv, item, prefetch, steps, state);
}
#endif

}  // namespace

AttentionKernels GetAttentionKernels() {
  return {hwy::TargetName(HWY_TARGET), HWY_TARGET, &PartialT};
}

// This target's kernel with the int16 steps for int8 KV ("AVX3_VNNI", "AVX3_I16", "AVX2_I16"),
// and the bf16 steps for fp8 where the CPU has them too ("AVX3_VNNI_BF16"), where the target and
// CPU have them; else partial == nullptr.
AttentionKernels GetInt16AttentionKernels() {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  if (const LowPrecisionSteps* steps = Int16StepsOfTarget()) {
    const bool vnni = steps == Int8StepsAvx512Vnni();
    const bool bf16 = Bf16StepsOfTarget(KvDtype::kFp8E4M3) != nullptr;
    const bool int4 = Int4StepsOfTarget(false) != nullptr;
    const char* name = HWY_TARGET == HWY_AVX2 ? "AVX2_I16"
                       : vnni                 ? (bf16 ? "AVX3_VNNI_BF16" : "AVX3_VNNI")
                                              : (bf16 ? "AVX3_I16_BF16" : "AVX3_I16");
    return {name,
            HWY_TARGET,
            &PartialLowPrecision,
            KvPrefetchLevel::kL1,
            /*int8_int16=*/true,
            0,
            /*fp8_bf16=*/bf16,
            /*int4_int8=*/int4};
  }
#endif
  return {};
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace kvengine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvengine {

HWY_EXPORT(GetAttentionKernels);
HWY_EXPORT(GetInt16AttentionKernels);

namespace {

// The kernels ForceAttentionKernels chooses from: AvailableAttentionKernels(), then the reference.
const std::vector<AttentionKernels>& ChoosableKernels() {
  static const std::vector<AttentionKernels>* const all = [] {
    auto* v = new std::vector<AttentionKernels>(AvailableAttentionKernels());
    AttentionKernels ref = ReferenceAttentionKernels();
    ref.prefetch = DefaultKvPrefetchLevel();
    v->push_back(ref);
    return v;
  }();
  return *all;
}

// ForceAttentionKernels' choice; nullptr: the best (below).
std::atomic<const AttentionKernels*> g_forced{nullptr};

}  // namespace

Status ForceAttentionKernels(std::string_view name) {
  if (EqualsIgnoreCase(name, "auto")) {
    g_forced.store(nullptr, std::memory_order_release);
    return Status::Ok();
  }
  std::string available;
  for (const AttentionKernels& k : ChoosableKernels()) {
    if (EqualsIgnoreCase(name, k.target_name)) {
      g_forced.store(&k, std::memory_order_release);
      return Status::Ok();
    }
    available += (available.empty() ? "" : ", ") + std::string(k.target_name);
  }
  return InvalidArgument("unknown attention kernel '" + std::string(name) +
                         "'; available on this CPU: " + available + " (or auto)");
}

// ForceAttentionKernels' choice, else the int16 variant of the dispatched target where there is
// one (AVX3, AVX2), else the target's kernel.
const AttentionKernels& DefaultAttentionKernels() {
  if (const AttentionKernels* forced = g_forced.load(std::memory_order_acquire)) return *forced;
  static const AttentionKernels kernels = [] {
    const AttentionKernels int16 = HWY_DYNAMIC_DISPATCH(GetInt16AttentionKernels)();
    AttentionKernels k =
        int16.partial != nullptr ? int16 : HWY_DYNAMIC_DISPATCH(GetAttentionKernels)();
    k.prefetch = DefaultKvPrefetchLevel();
    return k;
  }();
  return kernels;
}

const char* AttentionArithmetic(const AttentionKernels& kernels, const KvLayerView& kv) {
  if (kernels.int8_int16 && Int8Int16Applies(kv)) return "int16";
  if (kernels.int4_int8 && Int4Int8Applies(kv)) {
    return Int4Int8ValuesApply(kv) ? "int8+int16" : "int8+f32";
  }
  return kernels.fp8_bf16 && Fp8Bf16Applies(kv) ? "bf16" : "f32";
}

std::vector<AttentionKernels> AvailableAttentionKernels() {
  std::vector<AttentionKernels> all;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const AttentionKernels int16 = HWY_DYNAMIC_DISPATCH(GetInt16AttentionKernels)();
    if (int16.partial != nullptr) all.push_back(int16);
    all.push_back(HWY_DYNAMIC_DISPATCH(GetAttentionKernels)());
  }
  hwy::SetSupportedTargetsForTest(0);
  for (AttentionKernels& k : all) k.prefetch = DefaultKvPrefetchLevel();
  return all;
}

}  // namespace kvengine
#endif  // HWY_ONCE
