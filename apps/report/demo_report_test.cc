#include "report/demo_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace kvengine::demo {
namespace {

using ::testing::HasSubstr;

// A hand-made workload and two runs with round figures.
struct Fixture {
  Workload workload;
  RunResult f16, int8;

  Fixture() {
    workload.options.max_tokens = 4;
    for (Scenario s : kAllScenarios) {
      DemoRequest r;
      r.scenario = s;
      r.tokens.assign(100, 5);
      r.prompt_tokens = 100;
      r.max_tokens = 4;
      workload.requests.push_back(r);
    }
    f16.kv_dtype = KvDtype::kF16;
    f16.max_model_len = 4096;
    f16.block_size = 16;
    f16.kv_bytes_per_token = 12288;
    f16.kv_bytes_per_max_sequence = 12288ull * 4096;  // 48 MiB.
    f16.wall_s = 2;
    f16.peak_kv_bytes = 12ull << 20;  // 12 MiB.
    f16.peak_sequences = 5;           // Contiguous: 5 x 48 MiB = 240 MiB = 20x.
    f16.peak_tokens_stored = 1000;
    f16.generated_tokens = 12;
    for (Scenario s : kAllScenarios) {
      RequestResult r;
      r.scenario = s;
      r.prompt_tokens = 100;
      r.cached_prompt_tokens = s == Scenario::kMultiTurnChat ? 0 : 64;
      r.completion_tokens = 4;
      r.ttft_s = 0.25;
      f16.requests.push_back(r);
    }
    f16.prompt_tokens = 300;
    f16.cached_prompt_tokens = 128;
    int8 = f16;
    int8.kv_dtype = KvDtype::kInt8;
    int8.kv_bytes_per_token = 6528;
    int8.peak_kv_bytes = 6ull << 20;  // 0.50x of f16.
  }

  ReportInput Input() const {
    ReportInput in;
    in.model = "small";
    in.synthetic = true;
    in.n_layers = 12;
    in.threads = 2;
    in.kernel_target = "AVX2";
    in.workload = &workload;
    in.f16 = &f16;
    in.int8 = &int8;
    return in;
  }
};

TEST(GroupDigits, Thousands) {
  EXPECT_EQ(GroupDigits(0), "0");
  EXPECT_EQ(GroupDigits(999), "999");
  EXPECT_EQ(GroupDigits(1000), "1,000");
  EXPECT_EQ(GroupDigits(1234567), "1,234,567");
  EXPECT_EQ(GroupDigits(-12345), "-12,345");
  EXPECT_EQ(GroupDigits(INT64_MIN), "-9,223,372,036,854,775,808");
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 50), 2);
  EXPECT_EQ(Percentile({3, 1, 2}, 100), 3);
  EXPECT_EQ(Percentile({3, 1, 2}, 0), 1);
  EXPECT_EQ(Percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90), 9);
}

TEST(DemoReport, FiguresAndRatios) {
  Fixture fx;
  const std::string text = FormatReport(fx.Input());
  EXPECT_THAT(text, HasSubstr("kvengine demo: small (synthetic"));
  EXPECT_THAT(text, HasSubstr("12.00 MiB"));
  EXPECT_THAT(text, HasSubstr("240.00 MiB"));
  EXPECT_THAT(text, HasSubstr("5 sequences x 48.00 MiB (4,096 tokens): 20.0x the paged peak"));
  EXPECT_THAT(text, HasSubstr("0.50x of f16"));
  EXPECT_THAT(text, HasSubstr("12,288"));
  EXPECT_THAT(text, HasSubstr("6,528"));
  EXPECT_THAT(text, HasSubstr("42.7%"));  // 128 / 300 prompt tokens from the cache.
  EXPECT_THAT(text, HasSubstr("6.0"));    // 12 generated tokens in 2 s.
  EXPECT_THAT(text, HasSubstr("kvengine demo -m path/to/model.gguf"));
  EXPECT_THAT(text, HasSubstr("kvengine serve -m path/to/model.gguf"));
  EXPECT_THAT(text, HasSubstr("curl -s localhost:8080/v1/completions"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("preemptions")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("shrunk")));
}

TEST(DemoReport, FitsOneScreen) {
  Fixture fx;
  const std::string text = FormatReport(fx.Input());
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_LE(n, 40);
}

TEST(DemoReport, NotesShrinkingAndPreemption) {
  Fixture fx;
  fx.f16.preemptions = 2;
  ReportInput in = fx.Input();
  in.shrunk_from = 1600;
  const std::string text = FormatReport(in);
  EXPECT_THAT(text, HasSubstr("longest request 1,600 -> 104 tokens"));
  EXPECT_THAT(text, HasSubstr("2 preemptions"));
}

TEST(DemoReport, Json) {
  Fixture fx;
  const nlohmann::json j = nlohmann::json::parse(FormatReportJson(fx.Input()));
  EXPECT_EQ(j["model"], "small");
  EXPECT_EQ(j["paged_kv_bytes"], 12ull << 20);
  EXPECT_EQ(j["contiguous_kv_bytes"], 240ull << 20);
  EXPECT_DOUBLE_EQ(j["contiguous_over_paged"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["int8_over_f16"].get<double>(), 0.5);
  EXPECT_EQ(j["f16"]["kv_bytes_per_token"], 12288);
  EXPECT_EQ(j["int8"]["kv_dtype"], "int8");
  EXPECT_EQ(j["workload"]["requests"], 3);
  EXPECT_EQ(j["workload"]["scenarios"]["multi_turn_chat"]["cached_prompt_tokens"], 0);
  EXPECT_DOUBLE_EQ(j["workload"]["scenarios"]["long_document"]["prefix_hit_rate"].get<double>(),
                   0.64);
}

}  // namespace
}  // namespace kvengine::demo
