// The benchmark's KV layouts: the paged and contiguous builds of one spec hold the same values,
// the paged layout is the pool's (BlockLayout) in a shuffled order, and PagedAttentionBatch over
// either layout matches ContiguousAttentionRef over the decoded values.
#include "bench/perf/synthetic_kv_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/attention/attention_bf16.h"
#include "kernels/attention/attention_int4.h"
#include "kernels/attention/attention_kernel.h"
#include "base/strings.h"
#include "kv/block_layout.h"
#include "bench/perf/attention_bench.h"
#include "report/perf_reports.h"

namespace kvengine {
namespace {

// Attention over the same decoded K/V: float accumulation (and a split that may differ between
// block sizes) vs the reference's doubles. Outputs are averages of N(0, 1) values.
constexpr float kLayoutTolerance = 1e-4f;
// fp8 through the bf16 steps (the default kernel on CPUs with AVX512_BF16) rounds q and the
// weights to bf16: attention_kernel_test.cc's budget of 2e-2 of max|v| (|v| < 5 here).
constexpr float kBf16Fp8Tolerance = 0.1f;
// int4 K through the int8 score steps (the default kernel on CPUs with AVX-512 VNNI) rounds q to
// int8: attention_kernel_test.cc's budget of 6e-2 of max|v|.
constexpr float kInt8Int4Tolerance = 0.3f;

constexpr KvDtype kBenchDtypes[] = {KvDtype::kF16, KvDtype::kBF16, KvDtype::kFp8E4M3,
                                    KvDtype::kInt8, KvDtype::kInt4};

SyntheticKvSpec SmallSpec(KvDtype dtype, KvLayout layout) {
  SyntheticKvSpec s;
  s.dtype = dtype;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.context = 100;  // Not a multiple of the block: the last block is partial.
  s.layout = layout;
  s.block_size = 16;
  s.copies = layout == KvLayout::kPaged ? 3 : 2;
  s.seed = 11;
  return s;
}

TEST(SyntheticKvLayerTest, PagedViewIsThePoolsBlockLayout) {
  for (KvDtype d : kBenchDtypes) {
    SCOPED_TRACE(std::string(KvDtypeName(d)));
    KvGroupSpec g;
    g.layers = {0};
    g.num_kv_heads = 8;
    g.head_dim_k = g.head_dim_v = 128;
    g.dtypes = {{d, d}};
    const BlockLayout lay(g, 16);
    const KvLayerView v = SingleLayerView(d, 8, 128, 16);
    EXPECT_EQ(v.bytes_per_block, lay.bytes_per_block());
    EXPECT_EQ(v.k_data, lay.layer(0).k_data);
    EXPECT_EQ(v.k_scale, lay.layer(0).k_scale);
    EXPECT_EQ(v.v_data, lay.layer(0).v_data);
    EXPECT_EQ(v.v_scale, lay.layer(0).v_scale);
    EXPECT_EQ(v.k_row_bytes, lay.layer(0).k_row.data_bytes);
    EXPECT_EQ(v.v_scale_bytes, lay.layer(0).v_row.scale_bytes);
  }
}

TEST(SyntheticKvLayerTest, PagedTablesAreAShuffledPermutationOfThePool) {
  Result<SyntheticKvLayer> l = SyntheticKvLayer::Build(SmallSpec(KvDtype::kF16, KvLayout::kPaged));
  ASSERT_TRUE(l.ok()) << l.status().message();
  std::vector<int32_t> all;
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(l->block_table(c).size(), 7u);  // ceil(100 / 16).
    all.insert(all.end(), l->block_table(c).begin(), l->block_table(c).end());
  }
  std::vector<int32_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], int32_t(i));
  EXPECT_FALSE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(l->storage_bytes(), 21 * l->view().bytes_per_block);
}

TEST(SyntheticKvLayerTest, ContiguousIsOneBlockPerCopy) {
  Result<SyntheticKvLayer> l =
      SyntheticKvLayer::Build(SmallSpec(KvDtype::kInt8, KvLayout::kContiguous));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->view().block_size, 100);
  ASSERT_EQ(l->block_table(1).size(), 1u);
  EXPECT_EQ(l->block_table(1)[0], 1);
  // int8, 64 elements: 64 data bytes + a 2-byte scale per row, K and V, 2 heads, 100 tokens.
  EXPECT_EQ(l->kv_bytes_per_query(), uint64_t(2 * (64 + 2) * 2 * 100));
}

TEST(SyntheticKvLayerTest, LayoutsHoldTheSameValuesAndGiveTheReferenceAttention) {
  const int n_heads = 8;  // GQA: 4 query heads per KV head.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (KvDtype d : kBenchDtypes) {
    SCOPED_TRACE(std::string(KvDtypeName(d)));
    Result<SyntheticKvLayer> paged = SyntheticKvLayer::Build(SmallSpec(d, KvLayout::kPaged));
    Result<SyntheticKvLayer> contig = SyntheticKvLayer::Build(SmallSpec(d, KvLayout::kContiguous));
    ASSERT_TRUE(paged.ok() && contig.ok());
    std::vector<float> kp, vp, kc, vc, k2, v2;
    paged->Decode(2, &kp, &vp);
    contig->Decode(0, &kc, &vc);
    contig->Decode(1, &k2, &v2);
    ASSERT_EQ(kp, kc);  // Same values position by position, in every copy.
    ASSERT_EQ(vp, vc);
    ASSERT_EQ(kc, k2);
    EXPECT_GT(*std::max_element(kp.begin(), kp.end()), 0.5f);  // Random, not zeros.
    std::vector<float> q(size_t(n_heads) * 64);
    for (float& x : q) x = normal(rng);
    const float scale = 0.125f;
    const AttentionKernels& kernels = DefaultAttentionKernels();
    const float tol = kernels.fp8_bf16 && Fp8Bf16Applies(paged->view())     ? kBf16Fp8Tolerance
                      : kernels.int4_int8 && Int4Int8Applies(paged->view()) ? kInt8Int4Tolerance
                                                                            : kLayoutTolerance;
    for (int64_t pos : {int64_t{0}, int64_t{37}, int64_t{99}}) {
      std::vector<float> ref(q.size()), out_p(q.size()), out_c(q.size());
      ContiguousAttentionRef(paged->view(), kc.data(), vc.data(), q.data(), n_heads, pos, scale,
                             ref.data());
      const AttentionQuery qp{paged->block_table(1), q.data(), pos, out_p.data()};
      const AttentionQuery qc{contig->block_table(0), q.data(), pos, out_c.data()};
      PagedAttentionBatch(paged->view(), std::span(&qp, 1), n_heads, scale, nullptr);
      PagedAttentionBatch(contig->view(), std::span(&qc, 1), n_heads, scale, nullptr);
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_NEAR(out_p[i], ref[i], tol) << "paged pos " << pos << " i " << i;
        ASSERT_NEAR(out_c[i], ref[i], tol) << "contiguous pos " << pos << " i " << i;
      }
    }
  }
}

TEST(SyntheticKvLayerTest, RejectsBadSpecs) {
  SyntheticKvSpec s = SmallSpec(KvDtype::kF16, KvLayout::kPaged);
  s.context = 0;
  EXPECT_FALSE(SyntheticKvLayer::Build(s).ok());
  s = SmallSpec(KvDtype::kF16, KvLayout::kPaged);
  s.block_size = 300;
  EXPECT_FALSE(SyntheticKvLayer::Build(s).ok());
  s = SmallSpec(KvDtype::kF16, KvLayout::kPaged);
  s.copies = 0;
  EXPECT_FALSE(SyntheticKvLayer::Build(s).ok());
  EXPECT_TRUE(ParseKvLayout("paged").ok());
  EXPECT_FALSE(ParseKvLayout("strided").ok());
}

// Options of a quick run: small head dim, footprint and bandwidth buffer, no minimum time.
AttentionBenchOptions QuickOptions() {
  AttentionBenchOptions o;
  o.head_dim = 64;
  o.min_seconds = 0;
  o.min_iterations = 2;
  o.footprint_bytes = 1 << 20;
  o.read_bw.bytes = 4 << 20;
  o.read_bw.min_seconds = 0;
  o.read_bw.min_passes = 1;
  o.read_bw.row_min_seconds = 0;
  return o;
}

// Rounds: the sweep runs that many times and each row keeps its fastest run, in the same order.
TEST(AttentionBenchTest, RoundsKeepEachRowsFastestInTheSweepsOrder) {
  AttentionBenchOptions o = QuickOptions();
  o.contexts = {64, 128};
  o.kv_dtypes = {KvDtype::kF16, KvDtype::kInt8};
  o.threads = {1};
  o.n_heads = 4;
  o.num_kv_heads = 1;
  o.layouts = {KvLayout::kPaged};
  o.rounds = 3;
  std::vector<int64_t> totals;
  int64_t last_done = -1;
  Result<AttentionBenchResult> r = RunAttentionBench(o, [&](int64_t done, int64_t total) {
    last_done = done;
    totals.push_back(total);
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 4u);
  EXPECT_EQ(last_done, 12);
  for (int64_t t : totals) EXPECT_EQ(t, 12);
  const KvDtype dtypes[] = {KvDtype::kF16, KvDtype::kF16, KvDtype::kInt8, KvDtype::kInt8};
  const int64_t contexts[] = {64, 128, 64, 128};
  for (size_t i = 0; i < r->rows.size(); ++i) {
    const AttentionBenchRow& row = r->rows[i];
    EXPECT_EQ(row.kv_dtype, dtypes[i]);
    EXPECT_EQ(row.context, contexts[i]);
    EXPECT_GT(row.us_per_token, 0);
    EXPECT_DOUBLE_EQ(row.fraction_of_read_bw, row.kv_gb_per_s / row.read_bw_gb_per_s);
  }
  EXPECT_EQ(r->options.rounds, 3);
  EXPECT_EQ(CountOccurrences(FormatAttentionBenchJson(*r), "\"rounds\": 3"), 4u);
  EXPECT_NE(FormatAttentionBenchText(*r).find("fastest of 3 passes"), std::string::npos);
  o.rounds = 0;
  EXPECT_FALSE(RunAttentionBench(o).ok());
}

TEST(AttentionBenchTest, TinySweepGivesOneRowPerPointWithItsBandwidth) {
  AttentionBenchOptions o = QuickOptions();
  o.contexts = {64, 200};
  o.kv_dtypes = {KvDtype::kF16, KvDtype::kInt4};
  o.threads = {1, 2};
  o.n_heads = 8;
  o.num_kv_heads = 2;
  int64_t last_done = -1, last_total = -1;
  Result<AttentionBenchResult> r = RunAttentionBench(o, [&](int64_t done, int64_t total) {
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 16u);
  EXPECT_EQ(last_done, 16);
  EXPECT_EQ(last_total, 16);
  ASSERT_EQ(r->read_bw_gb_per_s.size(), 2u);
  for (const AttentionBenchRow& row : r->rows) {
    EXPECT_GE(row.iterations, 2);
    EXPECT_GT(row.kv_gb_per_s, 0);
    EXPECT_GE(row.copies, 1);
    // Measured after the row, with its thread count: a rate of its own.
    EXPECT_GT(row.read_bw_gb_per_s, 0);
    EXPECT_TRUE(std::isfinite(row.read_bw_gb_per_s));
    EXPECT_DOUBLE_EQ(row.fraction_of_read_bw, row.kv_gb_per_s / row.read_bw_gb_per_s);
    EXPECT_EQ(row.block_size, row.layout == KvLayout::kPaged ? 16 : row.context);
    // f16 at 4 query heads per KV head: 2 multiply-adds per KV byte.
    const double peak = r->fma_peak_gmacs[row.threads == 1 ? 0 : 1];
    const double f16_peak = r->f16_fma_peak_gmacs[row.threads == 1 ? 0 : 1];
    if (row.kv_dtype == KvDtype::kF16) {
      EXPECT_NEAR(row.fma_ceiling_gb_per_s, peak / 2, 1e-9 * peak);
      EXPECT_NEAR(row.f16_fma_ceiling_gb_per_s, f16_peak / 2, 1e-9 * f16_peak);
    } else {
      EXPECT_EQ(row.f16_fma_ceiling_gb_per_s, 0);
    }
    EXPECT_GT(row.fma_ceiling_gb_per_s, 0);
  }
  const std::string text = FormatAttentionBenchText(*r);
  EXPECT_NE(text.find("paged / contiguous"), std::string::npos);
  EXPECT_NE(text.find("tokens/s over f16"), std::string::npos);
  EXPECT_NE(text.find("compute ceiling"), std::string::npos);
  EXPECT_NE(text.find("f16 (cvt)"), std::string::npos);
  EXPECT_NE(text.find("fed by f16 conversions"), std::string::npos);
  const std::string json = FormatAttentionBenchJson(*r);
  EXPECT_NE(json.find("\"fraction_of_read_bw\""), std::string::npos);
  EXPECT_NE(json.find("\"f16_fma_ceiling_gb_per_s\""), std::string::npos);
}

// A result without running anything: f16 and int8 at two contexts, two thread counts, both
// layouts, at prefetch level kL1 (plus one kL2 row, which the chart leaves out).
AttentionBenchResult FakeResult() {
  AttentionBenchResult r;
  r.options.contexts = {1024, 4096};
  r.options.kv_dtypes = {KvDtype::kF16, KvDtype::kInt8};
  r.options.threads = {1, 2};
  r.read_bw_gb_per_s = {{1, 30.0}, {2, 60.0}};
  r.fma_peak_gmacs = {60.0, 120.0};
  r.settings = {{KvPrefetchLevel::kL1, 0}};
  for (KvDtype d : r.options.kv_dtypes) {
    for (int64_t c : r.options.contexts) {
      for (int t : r.options.threads) {
        for (KvLayout l : r.options.layouts) {
          AttentionBenchRow row;
          row.kv_dtype = d;
          row.context = c;
          row.threads = t;
          row.layout = l;
          row.prefetch = KvPrefetchLevel::kL1;
          row.tokens_per_s = d == KvDtype::kF16 ? 100.0 : 150.0;
          row.read_bw_gb_per_s = 30.0 * t;
          row.fraction_of_read_bw = d == KvDtype::kF16 ? 0.5 : 0.375;
          row.kv_gb_per_s = row.fraction_of_read_bw * row.read_bw_gb_per_s;
          r.rows.push_back(row);
        }
      }
    }
  }
  AttentionBenchRow other = r.rows[0];
  other.prefetch = KvPrefetchLevel::kL2;
  other.fraction_of_read_bw = 3.0;  // Would raise the axis if it were drawn.
  r.rows.push_back(other);
  return r;
}

TEST(AttentionBenchTest, SvgDrawsFractionsAndSpeedUps) {
  const AttentionBenchResult r = FakeResult();
  const std::string svg = FormatAttentionBenchSvg(r);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(CountOccurrences(svg, "<text"), CountOccurrences(svg, "</text>"));
  // A bar per kL1 row in the fractions, a bar per int8 row in the speed-ups.
  EXPECT_EQ(CountOccurrences(svg, "<title>"), 16u + 8u);
  EXPECT_EQ(CountOccurrences(svg, ">0.50<"), 8u);   // f16's fraction on its bars.
  EXPECT_EQ(CountOccurrences(svg, ">0.38<"), 8u);   // int8's.
  EXPECT_EQ(CountOccurrences(svg, ">1.50x<"), 8u);  // int8 over f16.
  // The goal line in the legend and in each of the 4 fraction panels; the memory-bound tick in
  // the legend and on each int8 bar; the axis stays at 1 (the kL2 row is not drawn).
  EXPECT_EQ(CountOccurrences(svg, "stroke-dasharray"), 1u + 4u);
  EXPECT_EQ(CountOccurrences(svg, "stroke-width=\"2\""), 1u + 8u);
  EXPECT_EQ(svg.find(">3<"), std::string::npos);
  EXPECT_NE(svg.find("int8, 4096 tokens, contiguous, 2 threads: 1.50x; 150.0 tokens/s, KV"),
            std::string::npos);  // A tooltip.
}

TEST(AttentionBenchTest, KvBytesRatioOverF16CountsScales) {
  EXPECT_DOUBLE_EQ(KvBytesRatioOverF16(KvDtype::kF16, 128), 1.0);
  EXPECT_DOUBLE_EQ(KvBytesRatioOverF16(KvDtype::kInt8, 128), 256.0 / (128 + 2));
  EXPECT_DOUBLE_EQ(KvBytesRatioOverF16(KvDtype::kInt4, 128), 256.0 / (64 + 4 * 4));
}

TEST(AttentionBenchTest, SvgWithoutF16HasNoSpeedUps) {
  AttentionBenchResult r = FakeResult();
  std::erase_if(r.rows, [](const AttentionBenchRow& row) { return row.kv_dtype == KvDtype::kF16; });
  r.options.kv_dtypes = {KvDtype::kInt8};
  const std::string svg = FormatAttentionBenchSvg(r);
  EXPECT_EQ(CountOccurrences(svg, "<title>"), 8u);
  EXPECT_EQ(svg.find("over f16"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

// Both prefetch levels: one row per level, the default level when none is asked for, and a ratio
// table of the two.
TEST(AttentionBenchTest, ComparesPrefetchLevels) {
  AttentionBenchOptions o = QuickOptions();
  o.contexts = {200};
  o.kv_dtypes = {KvDtype::kInt8};
  o.threads = {1};
  o.layouts = {KvLayout::kPaged};
  o.n_heads = 4;
  o.num_kv_heads = 1;
  Result<AttentionBenchResult> r = RunAttentionBench(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].prefetch, DefaultKvPrefetchLevel());
  EXPECT_EQ(FormatAttentionBenchText(*r).find("prefetch into"), std::string::npos);
  o.prefetch_levels = {KvPrefetchLevel::kL1, KvPrefetchLevel::kL2};
  r = RunAttentionBench(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].prefetch, KvPrefetchLevel::kL1);
  EXPECT_EQ(r->rows[1].prefetch, KvPrefetchLevel::kL2);
  EXPECT_NE(FormatAttentionBenchText(*r).find("prefetch into l2 / prefetch into l1"),
            std::string::npos);
  EXPECT_NE(FormatAttentionBenchJson(*r).find("\"prefetch\": \"l2\""), std::string::npos);
}

// KV heads per item: auto and a count, one row each with what was planned, a ratio table, and
// the settings in order (prefetch-major); a count above the KV heads is refused.
TEST(AttentionBenchTest, ComparesItemHeads) {
  AttentionBenchOptions o = QuickOptions();
  o.contexts = {200};
  o.kv_dtypes = {KvDtype::kF16};
  o.threads = {1};
  o.layouts = {KvLayout::kPaged, KvLayout::kContiguous};
  o.n_heads = 8;
  o.num_kv_heads = 4;
  o.item_heads = {0, 1};
  Result<AttentionBenchResult> r = RunAttentionBench(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->settings.size(), 2u);
  ASSERT_EQ(r->rows.size(), 4u);  // [layout][setting]
  EXPECT_EQ(r->rows[0].item_heads, 0);
  EXPECT_EQ(r->rows[0].kv_heads_per_item, 4);  // Paged blocks of 16: short runs, one thread.
  EXPECT_EQ(r->rows[1].item_heads, 1);
  EXPECT_EQ(r->rows[1].kv_heads_per_item, 1);
  EXPECT_EQ(r->rows[2].layout, KvLayout::kContiguous);
  EXPECT_EQ(r->rows[2].kv_heads_per_item, 1);  // Whole-context runs: one head per item.
  const std::string text = FormatAttentionBenchText(*r);
  EXPECT_NE(text.find("KV heads per item 1 / KV heads per item auto"), std::string::npos);
  EXPECT_EQ(text.find("prefetch into"), std::string::npos);
  const std::string json = FormatAttentionBenchJson(*r);
  EXPECT_NE(json.find("\"item_heads\": \"auto\""), std::string::npos);
  EXPECT_NE(json.find("\"item_heads\": \"1\""), std::string::npos);
  EXPECT_NE(json.find("\"kv_heads_per_item\": 4"), std::string::npos);
  o.item_heads = {5};
  EXPECT_FALSE(RunAttentionBench(o).ok());
}

}  // namespace
}  // namespace kvengine
