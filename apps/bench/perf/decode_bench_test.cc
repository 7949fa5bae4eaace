// The decode benchmark on a tiny synthetic model: which rows it runs, where the prefill goes,
// and the bytes it says a step reads.
#include "bench/perf/decode_bench.h"

#include <gtest/gtest.h>

#include "base/strings.h"
#include "bench/perf/bench_rounds.h"
#include "synth/synth_test_util.h"
#include "synth/synthetic_model.h"
#include "synth/synthetic_spec.h"
#include "report/perf_reports.h"

namespace kvengine {
namespace {

class DecodeBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
    const std::string path = dir_.File("tiny.gguf");
    ASSERT_TRUE(WriteSyntheticModel(spec, path).ok());
    Result<std::unique_ptr<GgufFile>> f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    file_ = std::move(*f);
    Result<std::unique_ptr<Model>> m = LoadModel(file_, "tiny");
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
  }

  static DecodeBenchOptions Small() {
    DecodeBenchOptions o;
    o.kv_dtypes = {KvDtype::kF16, KvDtype::kInt8};
    o.depths = {0, 40};
    o.batches = {1, 3};
    o.prompt_tokens = 20;
    o.prefill_chunk = 8;
    o.steps = 3;
    o.read_bw.bytes = 4 << 20;
    o.read_bw.min_seconds = 0;
    o.read_bw.min_passes = 1;
    return o;
  }

  synth_test::ScopedTempDir dir_;
  std::shared_ptr<GgufFile> file_;
  std::unique_ptr<Model> model_;
};

TEST_F(DecodeBenchTest, RunsEachDepthThenEachBatchOncePerDtype) {
  ThreadPool pool(2);
  int64_t last = -1, total = -1;
  Result<DecodeBenchResult> r =
      RunDecodeBench(*model_, *file_, pool, Small(), [&](int64_t d, int64_t t) {
        last = d;
        total = t;
      });
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Per dtype: (0, 1), (40, 1), (0, 3); (0, 1) from the batches is the first row again.
  ASSERT_EQ(r->rows.size(), 6u);
  EXPECT_EQ(last, 8);  // 6 rows + 2 prefills.
  EXPECT_EQ(total, 8);
  EXPECT_EQ(r->threads, 2);
  EXPECT_GT(r->read_bw_gb_per_s, 0);
  const int64_t depth[] = {0, 40, 0};
  const int batch[] = {1, 1, 3};
  for (size_t i = 0; i < r->rows.size(); ++i) {
    const DecodeBenchRow& row = r->rows[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(row.kv_dtype, i < 3 ? KvDtype::kF16 : KvDtype::kInt8);
    EXPECT_EQ(row.depth, depth[i % 3]);
    EXPECT_EQ(row.batch, batch[i % 3]);
    EXPECT_EQ(row.kv_filled_randomly, row.depth > 0);
    EXPECT_EQ(row.steps, 3);
    EXPECT_GT(row.decode_tokens_per_s, 0);
    // Its own read bandwidth, measured after its steps, is its fraction's denominator.
    EXPECT_GT(row.read_bw_gb_per_s, 0);
    EXPECT_DOUBLE_EQ(row.fraction_of_read_bw, row.implied_gb_per_s / row.read_bw_gb_per_s);
    EXPECT_EQ(row.weight_bytes_per_step, DecodeWeightBytes(*file_, row.batch));
    // The prefill is on the (0, 1) row only.
    EXPECT_EQ(row.prefill_tokens, i % 3 == 0 ? 20 : 0);
    if (i % 3 == 0) {
      EXPECT_GT(row.prefill_tokens_per_s, 0);
      EXPECT_GT(row.prefill_fma_peak_gmacs, 0);
      // 20 prompt tokens through the layers, one output projection per chunk of 8 (3 chunks).
      const WeightMacs macs = DecodeWeightMacs(*file_);
      EXPECT_NEAR(row.prefill_weight_gmacs_per_s,
                  (20.0 * double(macs.layers) + 3.0 * double(macs.output)) *
                      (row.prefill_tokens_per_s / 20.0) / 1e9,
                  1e-9 * row.prefill_weight_gmacs_per_s);
      EXPECT_DOUBLE_EQ(row.prefill_fraction_of_fma_peak,
                       row.prefill_weight_gmacs_per_s / row.prefill_fma_peak_gmacs);
    } else {
      EXPECT_EQ(row.prefill_fma_peak_gmacs, 0);
    }
    // The arithmetic side: the weights' multiply-adds at the row's tokens/s, against the FMA
    // peak measured after the row.
    const WeightMacs macs = DecodeWeightMacs(*file_);
    EXPECT_EQ(row.weight_macs_per_token, macs.layers + macs.output);
    EXPECT_DOUBLE_EQ(row.weight_gmacs_per_s,
                     double(row.weight_macs_per_token) * row.decode_tokens_per_s / 1e9);
    EXPECT_GT(row.fma_peak_gmacs, 0);
    EXPECT_DOUBLE_EQ(row.fraction_of_fma_peak, row.weight_gmacs_per_s / row.fma_peak_gmacs);
  }
  EXPECT_GT(r->fma_peak_gmacs, 0);
  // Deeper and wider steps read more KV; int8 rows read less KV than f16's.
  EXPECT_LT(r->rows[0].kv_bytes_per_step, r->rows[1].kv_bytes_per_step);
  EXPECT_LT(r->rows[0].kv_bytes_per_step, r->rows[2].kv_bytes_per_step);
  EXPECT_LT(r->rows[4].kv_bytes_per_step, r->rows[1].kv_bytes_per_step);
  const std::string text = FormatDecodeBenchText(*r);
  EXPECT_NE(text.find("filled with random values"), std::string::npos);
  EXPECT_NE(text.find("int8 / f16 at depth 40"), std::string::npos);
  EXPECT_NE(FormatDecodeBenchJson(*r).find("\"prefill_tokens_per_s\""), std::string::npos);
  // The chart: a bar per dtype for each depth, each batch and the prefill.
  const std::string svg = FormatDecodeBenchSvg(*r);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(CountOccurrences(svg, "<title>"), 2u * (2 + 2 + 1));
  EXPECT_NE(svg.find("int8 KV, depth 40, batch 1: "), std::string::npos);
  EXPECT_NE(svg.find(">depth 40<"), std::string::npos);
  EXPECT_NE(svg.find(">3 sequences<"), std::string::npos);
}

TEST(BenchRoundsTest, KeepFastestRoundAppendsThenKeepsTheFaster) {
  std::vector<double> rows;
  const auto seconds = [](double x) { return x; };
  KeepFastestRound(rows, 0, 0, 3.0, seconds);
  KeepFastestRound(rows, 1, 0, 5.0, seconds);
  KeepFastestRound(rows, 0, 1, 4.0, seconds);  // Slower than round 0's: kept 3.
  KeepFastestRound(rows, 1, 1, 2.0, seconds);  // Faster: replaces 5.
  EXPECT_EQ(rows, (std::vector<double>{3.0, 2.0}));
}

TEST_F(DecodeBenchTest, RoundsKeepEachRowsFastestPass) {
  DecodeBenchOptions o = Small();
  o.kv_dtypes = {KvDtype::kF16};
  o.rounds = 3;
  ThreadPool pool(1);
  int64_t last = -1, total = -1;
  Result<DecodeBenchResult> r = RunDecodeBench(*model_, *file_, pool, o, [&](int64_t d, int64_t t) {
    last = d;
    total = t;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The same rows as one round; every measurement of every round reports progress.
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(total, 3 * (3 + 1));
  EXPECT_EQ(last, total);
  EXPECT_EQ(r->rows[0].prefill_tokens, 20);
  for (const DecodeBenchRow& row : r->rows) {
    EXPECT_GT(row.decode_tokens_per_s, 0);
    EXPECT_DOUBLE_EQ(row.decode_tokens_per_s, double(row.batch) * row.steps / row.seconds);
  }
  EXPECT_NE(FormatDecodeBenchText(*r).find("fastest of 3 passes"), std::string::npos);
  EXPECT_EQ(CountOccurrences(FormatDecodeBenchJson(*r), "\"rounds\": 3"), 3u);
  o.rounds = 0;
  EXPECT_FALSE(RunDecodeBench(*model_, *file_, pool, o).ok());
  o.rounds = 101;
  EXPECT_FALSE(RunDecodeBench(*model_, *file_, pool, o).ok());
}

TEST_F(DecodeBenchTest, KvBytesPerStepFollowTheLayout) {
  // tiny at f16: per token and layer, K and V rows of every KV head, 2 bytes per element.
  const ModelConfig& c = model_->config();
  DecodeBenchOptions o = Small();
  o.kv_dtypes = {KvDtype::kF16};
  o.depths = {100};
  o.batches = {};
  o.prompt_tokens = 0;
  ThreadPool pool(1);
  Result<DecodeBenchResult> r = RunDecodeBench(*model_, *file_, pool, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 1u);
  const uint64_t per_token =
      uint64_t(c.n_layers) * uint64_t(c.n_kv_heads) * uint64_t(c.head_dim_k + c.head_dim_v) * 2;
  // Timed steps at positions 101, 102, 103: 103 visible positions on average.
  EXPECT_EQ(r->rows[0].kv_bytes_per_step, per_token * 103);
}

TEST_F(DecodeBenchTest, WeightBytesReadOnlyTheEmbeddingRowsOfTheBatch) {
  uint64_t all = 0;
  for (const GgufTensor& t : file_->tensors()) all += t.byte_size;
  const GgufTensor* embd = file_->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  ASSERT_NE(file_->FindTensor("output.weight"), nullptr);
  const uint64_t row = embd->byte_size / uint64_t(embd->dims[1]);
  EXPECT_EQ(DecodeWeightBytes(*file_, 1), all - embd->byte_size + row);
  EXPECT_EQ(DecodeWeightBytes(*file_, 4), all - embd->byte_size + 4 * row);
}

// The tiny preset: 2 layers, n_embd 64, 4 query heads and 2 KV heads of 16, n_ff 128, vocab 512.
TEST_F(DecodeBenchTest, WeightMacsCountEveryMatrixOncePerToken) {
  const WeightMacs macs = DecodeWeightMacs(*file_);
  const uint64_t attn = 64 * 64 + 2 * (64 * 2 * 16) + 64 * 64;  // q, k, v, o.
  const uint64_t ffn = 3 * 64 * 128;                            // gate, up, down.
  EXPECT_EQ(macs.layers, 2 * (attn + ffn));
  EXPECT_EQ(macs.output, 64u * 512u);  // output.weight; the embedding is a lookup.
}

TEST(DecodeWeightMacsTest, ATiedEmbeddingIsTheOutputProjection) {
  synth_test::ScopedTempDir dir;
  SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  spec.tied_output = true;
  const std::string path = dir.File("tied.gguf");
  ASSERT_TRUE(WriteSyntheticModel(spec, path).ok());
  Result<std::unique_ptr<GgufFile>> f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ((*f)->FindTensor("output.weight"), nullptr);
  const WeightMacs macs = DecodeWeightMacs(**f);
  EXPECT_EQ(macs.output, 64u * 512u);
  EXPECT_EQ(macs.layers, 2u * (64 * 64 + 2 * (64 * 2 * 16) + 64 * 64 + 3 * 64 * 128));
}

TEST_F(DecodeBenchTest, RejectsDepthsBeyondTheContext) {
  DecodeBenchOptions o = Small();
  o.depths = {model_->config().context_length};
  ThreadPool pool(1);
  EXPECT_FALSE(RunDecodeBench(*model_, *file_, pool, o).ok());
  o = Small();
  o.depths = {};
  o.batches = {};
  EXPECT_FALSE(RunDecodeBench(*model_, *file_, pool, o).ok());
}

}  // namespace
}  // namespace kvengine
