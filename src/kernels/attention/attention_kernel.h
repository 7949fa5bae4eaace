// Internal: the per-work-item kernel of decode attention (paged_attention.cc plans the items, runs
// them on the thread pool and merges their partial results).
//
// A work item is (query, run of KV heads, partition): for each of its KV heads, the query's
// `group` heads that share it, against the visible positions of one partition (a fixed range of
// kPartitionPositions positions, paged_attention.cc). The kernel streams those positions once, in
// ascending order, in chunks of up to kAttentionChunk positions, and takes the item's KV heads in
// turn within each chunk (so one thread reads all of a block's heads, which lie side by side,
// while the block is at hand): per chunk and KV head it reads each K row once (scores for every
// head of the group), updates the online softmax (running max m and sum l per head, rescaling the
// accumulator by e^(m_old - m_new)), and reads each V row once (acc += p * v for every head).
// Each KV head's arithmetic is the same whichever item holds it.
// Dequantization happens inside those loops, in registers, with the row decoders of
// attention_rows-inl.h (bit-identical decoded values; a per-row scale, fp8's and int8's,
// multiplies the position's dot product and softmax weight instead of each element; int4 rows come
// out in an even/odd element order that q and the value accumulators follow); int4 rows whose
// groups are not 32 elements and head dims that are not a multiple of the vector length are first
// decoded into a small f32 tile (kvengine::DecodeRow, also bit-identical) and then go the same way.
//
// The partial state it leaves, per KV head of the item (floats, `group` heads, dv = head_dim_v;
// the item's KV heads' states one after another, PartialStateFloats each):
//   m   [group]        max over the item's positions of q.k * scale
//   l   [group]        sum of e^(s - m)
//   acc [group][dv]    sum of e^(s - m) * v
// so that the attention output over several items is sum_j acc_j e^(m_j - M) / sum_j l_j e^(m_j-M).
//
// Every kernel is deterministic: the same item gives the same bits whichever thread runs it and
// whatever else is in the batch (the batch-invariance contract in paged_attention.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/attention/paged_attention.h"
#include "base/check.h"
#include "kvengine/status.h"

namespace kvengine {

// Positions per online-softmax step (one score vector per head per 16 of them on AVX-512). A
// chunk never holds more; it may hold fewer (the item's last chunk). 64 rather than 32 halves the
// per-chunk costs (softmax reductions and rescale, the V accumulators' load/rescale/store, the
// VNNI weight quantization): measured 5.5 -> 5.4 ms int8 and 7.8 -> 7.0 ms f16 per call at 32k
// contiguous, 1 thread. The VNNI V sums bound it: 64 * 127 * 32767 < 2^31 (attention_vnni.cc).
inline constexpr int kAttentionChunk = 64;
// Positions per score micro-tile of the SIMD kernels. A chunk's row list is padded to a whole
// number of them by repeating its last row (the kernels read the padding; its scores are masked).
inline constexpr int kAttentionPosTile = 4;

// One work item (see above). Its visible positions are [begin[0], end[0]) then [begin[1], end[1])
// (either may be empty; all of range 0 precedes range 1); together at least one position.
struct AttentionItem {
  std::span<const int32_t> block_table;
  // [kv_heads][group][head_dim_k]: the query heads (kv_head + j) * group + g.
  const float* q = nullptr;
  int kv_head = 0;   // The first KV head ...
  int kv_heads = 1;  // ... and how many, consecutive.
  int group = 1;
  float scale = 1.0f;
  int64_t begin[2] = {0, 0};
  int64_t end[2] = {0, 0};
};

// The four row addresses of one (KV head, position).
struct KvRowRefs {
  const uint8_t* k_data;
  const uint8_t* k_scale;
  const uint8_t* v_data;
  const uint8_t* v_scale;
};

// Byte strides of the four addresses of a KvRowRefs, and the references j strides on.
struct KvRowStrides {
  size_t k_data, k_scale, v_data, v_scale;
};
inline KvRowRefs Advance(const KvRowRefs& r, const KvRowStrides& s, size_t j) {
  return {r.k_data + j * s.k_data, r.k_scale + j * s.k_scale, r.v_data + j * s.v_data,
          r.v_scale + j * s.v_scale};
}
// From one position's rows to the next position's within a block ...
inline KvRowStrides RowStride(const KvLayerView& kv) {
  return {kv.k_row_bytes, kv.k_scale_bytes, kv.v_row_bytes, kv.v_scale_bytes};
}
// ... and from KV head h's rows to the same positions' rows of head h + 1: within a block the
// heads' runs of block_size rows follow one another (paged_attention.h).
inline KvRowStrides HeadStride(const KvLayerView& kv) {
  const size_t rows = size_t(kv.block_size);
  return {rows * kv.k_row_bytes, rows * kv.k_scale_bytes, rows * kv.v_row_bytes,
          rows * kv.v_scale_bytes};
}

// Walks an item's visible positions in ascending order, yielding the row addresses of its first
// KV head (HeadStride away from them, the next head's). Block lookups
// happen once per block (slot counters, no division per position); every block the walk enters
// must be in the table (KV_CHECK, as the old per-position check).
class ItemRowWalker {
 public:
  ItemRowWalker(const KvLayerView& kv, const AttentionItem& item) : kv_(kv), item_(item) {
    range_ = item.begin[0] < item.end[0] ? 0 : 1;
    Seek(item.begin[range_]);
  }
  // Positions left.
  int64_t remaining() const {
    int64_t n = item_.end[range_] - t_;
    if (range_ == 0) n += item_.end[1] - item_.begin[1];
    return n;
  }
  // Fills refs[0, n) with the next n <= remaining() positions (the row addresses advance by a
  // row stride within a block: no multiply per row). If run_starts, n <= 64 and it receives a
  // bit per row that starts a run: row 0, and each row after a change of block or range. Rows
  // between two run starts are consecutive positions of one block (adjacent rows and scales).
  void Next(int n, KvRowRefs* refs, uint64_t* run_starts = nullptr) {
    uint64_t starts = 1;
    for (int i = 0; i < n;) {
      if (t_ == item_.end[range_]) {
        range_ = 1;
        Seek(item_.begin[1]);
      }
      // The rest of this block's run within the range, from a local copy: advancing row_ in
      // place kept it in memory, each row's load waiting on the previous row's store (Zen 3, int8
      // in cache: 7% of a one-KV-head item's time, 1-3% with eight heads sharing the walk).
      const int m = int(std::min<int64_t>(
          {int64_t(n - i), int64_t(kv_.block_size - slot_), item_.end[range_] - t_}));
      if (new_run_) starts |= uint64_t(1) << (i & 63);
      new_run_ = false;
      // Row j of the run by a multiply: GCC 12.2 at -O3 vectorizes four running pointer sums
      // (r.k_data += ...; r.v_data += ...) wrongly, giving K the V rows' addresses (reduced case
      // in docs/notes/attention-kernel.md, "Where the in-cache time goes on AVX2").
      const KvRowRefs r = row_;
      const KvRowStrides stride = RowStride(kv_);
      for (int j = 0; j < m; ++j) refs[i + j] = Advance(r, stride, size_t(j));
      row_ = Advance(r, stride, size_t(m));
      i += m;
      t_ += m;
      slot_ += m;
      if (slot_ == kv_.block_size) Seek(t_);
    }
    if (run_starts != nullptr) {
      KV_DCHECK(n <= 64);
      *run_starts = starts;
    }
  }

 private:
  void Seek(int64_t t) {
    t_ = t;
    new_run_ = true;
    if (t >= item_.end[range_]) return;  // Range done; the next Next() moves on.
    const int64_t j = t / kv_.block_size;
    slot_ = int(t % kv_.block_size);
    const std::span<const int32_t> table = item_.block_table;
    KV_CHECK(j < int64_t(table.size()) && table[size_t(j)] >= 0)
        << "position " << t << " is not in the block table";
    const uint8_t* block = kv_.pool + size_t(table[size_t(j)]) * kv_.bytes_per_block;
    const size_t row = head_row_ + size_t(slot_);
    row_ = {
        block + kv_.k_data + row * kv_.k_row_bytes, block + kv_.k_scale + row * kv_.k_scale_bytes,
        block + kv_.v_data + row * kv_.v_row_bytes, block + kv_.v_scale + row * kv_.v_scale_bytes};
  }

  const KvLayerView& kv_;
  const AttentionItem& item_;
  const size_t head_row_ = size_t(item_.kv_head) * size_t(kv_.block_size);
  int range_ = 0;
  int64_t t_ = 0;
  int slot_ = 0;
  KvRowRefs row_{};      // The addresses of position t_.
  bool new_run_ = true;  // Position t_ does not follow the previous one in its block.
};

// Which cache the kernels' software prefetches fill with the rows of the chunks ahead. Measured
// at 32k, f16 and int8 paged, 1 thread, 48 KiB ahead: on Zen 5 (48 KiB L1d) L1 is faster (f16
// 8.1 ms per call against 9.8 ms into L2); on Zen 4 (32 KiB L1d) L2 is 1.4x faster (f16 14.5 ->
// 10.2 ms, int8 8.2 -> 5.9 ms): there the chunk being computed and the one prefetched do not fit
// in L1 together, and each evicts the other (docs/bench-attention.md, "Where to prefetch").
// With kL2 the float kernels also request the current chunk's V rows into L1 before its scores
// (PartialImpl, attention_hwy.cc; "The current chunk's V rows into L1").
enum class KvPrefetchLevel : uint8_t { kL1, kL2 };
const char* KvPrefetchLevelName(KvPrefetchLevel level);  // "l1" or "l2"
// kL1 where the L1 data cache holds at least kL1PrefetchMinBytes (or its size is unknown), else
// kL2. Read once (sysconf).
inline constexpr long kL1PrefetchMinBytes = 48 << 10;
KvPrefetchLevel DefaultKvPrefetchLevel();

// Rows to prefetch while a chunk is computed (the next chunk's): a few rows per micro-tile of
// scores, so the requests overlap the arithmetic instead of stalling in one burst (paged blocks
// hold one head's rows in short runs in no particular order, which the hardware prefetchers do
// not follow from one run to the next).
struct KvPrefetch {
  const KvRowRefs* rows = nullptr;  // nullptr: nothing to prefetch.
  int n = 0;
  size_t k_bytes = 0, v_bytes = 0;
  bool k_scale = false, v_scale = false;
  bool l2 = false;  // Into L2 (prefetcht1) rather than L1 (prefetcht0).
};

// Whether a and b lie in the same 64-byte cache line.
inline bool SameLine(const uint8_t* a, const uint8_t* b) {
  return reinterpret_cast<uintptr_t>(a) >> 6 == reinterpret_cast<uintptr_t>(b) >> 6;
}

// Requests the lines of [p, p + bytes) (kLocality 3: into L1, 2: into L2), four per loop step.
template <int kLocality>
__attribute__((always_inline)) inline void PrefetchBytes(const uint8_t* p, size_t bytes) {
  size_t b = 0;
  for (; b + 256 <= bytes; b += 256) {
    __builtin_prefetch(p + b, 0, kLocality);
    __builtin_prefetch(p + b + 64, 0, kLocality);
    __builtin_prefetch(p + b + 128, 0, kLocality);
    __builtin_prefetch(p + b + 192, 0, kLocality);
  }
  for (; b < bytes; b += 64) __builtin_prefetch(p + b, 0, kLocality);
}

template <int kLocality>
__attribute__((always_inline)) inline void PrefetchKvRowAt(const KvPrefetch& pf, int t) {
  const KvRowRefs& r = pf.rows[t];
  PrefetchBytes<kLocality>(r.k_data, pf.k_bytes);
  PrefetchBytes<kLocality>(r.v_data, pf.v_bytes);
  // A scale line serves many rows (16 per paged block and head): only a row whose line differs
  // from the previous row's asks.
  if (pf.k_scale && (t == 0 || !SameLine(r.k_scale, pf.rows[t - 1].k_scale))) {
    __builtin_prefetch(r.k_scale, 0, kLocality);
  }
  if (pf.v_scale && (t == 0 || !SameLine(r.v_scale, pf.rows[t - 1].v_scale))) {
    __builtin_prefetch(r.v_scale, 0, kLocality);
  }
}

// Prefetches row t of pf (nothing past pf.n). Always inlined: as a separate function GCC finds it
// side-effect free (prefetches do not count) and deletes the calls.
__attribute__((always_inline)) inline void PrefetchKvRow(const KvPrefetch& pf, int t) {
  if (pf.rows == nullptr || t >= pf.n) return;
  if (pf.l2) {
    PrefetchKvRowAt<2>(pf, t);
  } else {
    PrefetchKvRowAt<3>(pf, t);
  }
}

// Floats of one KV head's partial state (m, l, acc as above); an item leaves kv_heads of them.
inline size_t PartialStateFloats(int group, int head_dim_v) {
  return size_t(group) * (2 + size_t(head_dim_v));
}

// One compiled version of the item kernel.
struct AttentionKernels {
  // Highway's name ("AVX3", "AVX2", ...); "AVX3_VNNI", "AVX3_I16", "AVX2_I16" (that target with
  // the int16 steps of attention_int16.h for int8 KV: VNNI's or AVX2's; the "_VNNI" ones also
  // with the int8 score steps of attention_int4.h for int4 K), with "_BF16" where fp8 KV takes the
  // bf16 steps of attention_bf16.h too; or "ref".
  const char* target_name = "";
  int64_t hwy_target = 0;  // Highway target bit, 0 for the scalar reference.
  // Writes the item's partial states (item.kv_heads x PartialStateFloats(item.group,
  // kv.head_dim_v) floats). `prefetch` changes the speed only, never the bits.
  void (*partial)(const KvLayerView& kv, const AttentionItem& item, KvPrefetchLevel prefetch,
                  float* state) = nullptr;
  // What PagedAttentionBatchWith passes (DefaultKvPrefetchLevel() in the kernels below).
  KvPrefetchLevel prefetch = KvPrefetchLevel::kL1;
  // Whether int8 KV goes through the int16 steps of attention_int16.h where they apply (the
  // "_VNNI" and "_I16" kernels); else every dtype is decoded to f32 in registers.
  bool int8_int16 = false;
  // KV heads per work item PagedAttentionBatchWith plans (at most the layer's); 0: its own choice
  // (paged_attention.cc, HeadsPerItem). Changes the speed only, never the bits.
  int kv_heads_per_item = 0;
  // Whether fp8 KV goes through the bf16 steps of attention_bf16.h where they apply (the "_BF16"
  // kernels: q and the softmax weights rounded to bf16).
  bool fp8_bf16 = false;
  // Whether int4 K's scores go through the int8 dot products of attention_int4.h where they apply
  // (the "_VNNI" kernels: q rounded to int8), and int4 V through its int16 ones where they apply.
  bool int4_int8 = false;
};

// The arithmetic `kernels` uses on `kv`: "int16" (int8 K and V through int16 dot products), "bf16"
// (fp8 K and V through bf16 dot products), "int8+f32" (int4 K's scores through int8 dot
// products, V through f32 multiply-adds), "int8+int16" (and int4 V through int16 dot products)
// or "f32" (rows decoded to f32, f32 multiply-adds). For benchmark reports.
const char* AttentionArithmetic(const AttentionKernels& kernels, const KvLayerView& kv);

// The kernels PagedAttentionBatch (and so the model runtime) uses: the best target this CPU runs,
// chosen once (Highway dynamic dispatch), with DefaultKvPrefetchLevel(); or ForceAttentionKernels'.
const AttentionKernels& DefaultAttentionKernels();
// Replaces DefaultAttentionKernels()' choice by name, case-insensitive: a target_name of
// AvailableAttentionKernels() ("AVX3_VNNI_BF16", "AVX3", "AVX2_I16", ...), "ref" for the scalar
// reference, or "auto" for the best again. An unknown name is an InvalidArgument error listing the
// names this CPU has; the choice is then unchanged. Meant for start-up and tests (as
// ForceKernelTarget for the other kernels): calls running on other threads keep the kernels they
// started with.
Status ForceAttentionKernels(std::string_view name);
// Every compiled target this CPU runs, best first (each with DefaultKvPrefetchLevel()). Briefly
// overrides Highway's process-wide target choice (hwy::SetSupportedTargetsForTest): tests and
// benchmarks only.
std::vector<AttentionKernels> AvailableAttentionKernels();
// The scalar reference: decodes with ref::DecodeRow, double-precision scores and sums, plain
// softmax over the item's positions (no chunks). The specification the SIMD kernels are held to.
AttentionKernels ReferenceAttentionKernels();

// The KV heads per work item PagedAttentionBatchWith(kernels, kv, queries, ..., pool) plans:
// kernels.kv_heads_per_item where set, else its own choice (paged_attention.cc, HeadsPerItem).
int PlannedKvHeadsPerItem(const AttentionKernels& kernels, const KvLayerView& kv,
                          std::span<const AttentionQuery> queries, ThreadPool* pool);

// PagedAttentionBatch with the given kernels (the public one uses DefaultAttentionKernels()).
void PagedAttentionBatchWith(const AttentionKernels& kernels, const KvLayerView& kv,
                             std::span<const AttentionQuery> queries, int n_heads, float scale,
                             ThreadPool* pool);

}  // namespace kvengine
