// Encode/Decode on synthetic vocabularies (merge order, ties, byte and <unk> fallback, special
// tokens, flags) and on the real stories260K model against llama.cpp's golden ids.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;
using tokenizer_test::LlamaStyleVocab;
using tokenizer_test::ToFile;
using tokenizer_test::VocabSpec;
using tokenizer_test::WriterFor;

// "▁" (U+2581, the escaped space) followed by `rest`.
std::string Sp(std::string_view rest = "") { return "\xE2\x96\x81" + std::string(rest); }

constexpr int32_t kFirstPiece = 3 + 256;  // After <unk>, <s>, </s> and the byte tokens.

std::unique_ptr<Tokenizer> Build(const GgufWriter& writer) {
  std::unique_ptr<GgufFile> file = ToFile(writer);
  if (file == nullptr) return nullptr;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// Pieces: ids kFirstPiece + index.
std::vector<std::pair<std::string, float>> Pieces() {
  return {
      {Sp(), -5.0f},     // 0
      {"a", -1.0f},      // 1
      {"b", -1.0f},      // 2
      {"c", -1.0f},      // 3
      {"aa", -2.0f},     // 4
      {"ab", -3.0f},     // 5
      {"bc", -0.5f},     // 6
      {"abc", -0.1f},    // 7
      {Sp("a"), -4.0f},  // 8
  };
}
int32_t P(int i) { return kFirstPiece + i; }
int32_t Byte(int b) { return 3 + b; }

class SyntheticTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = Build(WriterFor(LlamaStyleVocab(Pieces())));
    ASSERT_NE(tok_, nullptr);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SyntheticTokenizerTest, MergesHighestScoreFirst) {
  // "▁abc": ▁a (-4) vs ab (-3) vs bc (-0.5): bc first, then abc (-0.1); ▁ stays alone.
  EXPECT_THAT(tok_->Encode("abc", false), ElementsAre(P(0), P(7)));
  EXPECT_THAT(tok_->Encode("abc", true), ElementsAre(1, P(0), P(7)));
}

TEST_F(SyntheticTokenizerTest, EqualScoresMergeLeftmostFirst) {
  // "▁aaa": ▁a (-4) loses to aa (-2) at positions 1 and 2; the leftmost wins.
  EXPECT_THAT(tok_->Encode("aaa", false), ElementsAre(P(0), P(4), P(1)));
}

TEST_F(SyntheticTokenizerTest, UnknownCharactersFallBackToBytes) {
  // "é" is not a piece: its two bytes come out as <0xC3> <0xA9>. Spaces are escaped to ▁.
  EXPECT_THAT(tok_->Encode("a\xC3\xA9 b", false),
              ElementsAre(P(8), Byte(0xC3), Byte(0xA9), P(0), P(2)));
  EXPECT_EQ(tok_->Decode(tok_->Encode("a\xC3\xA9 b", true)), "a\xC3\xA9 b");
}

TEST_F(SyntheticTokenizerTest, EmptyText) {
  EXPECT_THAT(tok_->Encode("", true), ElementsAre(1));
  EXPECT_TRUE(tok_->Encode("", false).empty());
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{}), "");
}

TEST_F(SyntheticTokenizerTest, ControlTokensAreTextUnlessParseSpecial) {
  const std::vector<int32_t> plain = tok_->Encode("<s>a", false);
  EXPECT_THAT(plain, Not(Contains(1)));
  EXPECT_EQ(tok_->Decode(plain), " <s>a");  // No leading BOS: the prefix space stays.
  // Parsed: the text after a special token gets the space prefix again.
  EXPECT_THAT(tok_->Encode("<s>a</s>", false, true), ElementsAre(1, P(8), 2));
  EXPECT_THAT(tok_->Encode("b<s>", false, true), ElementsAre(P(0), P(2), 1));
}

TEST_F(SyntheticTokenizerTest, SegmentsParseSpecialOnlyWhereTheySaySo) {
  using Seg = EncodeSegment;
  // Control tokens in a segment without parse_special are text; in one with, tokens.
  const std::vector<Seg> mixed = {{"<s>", true}, {"a</s>", false}, {"</s>", true}};
  const std::vector<int32_t> ids = tok_->Encode(mixed, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(tok_->Decode(ids), "a</s>");
  // A token straddling two segments is text, even when one of them parses specials.
  EXPECT_THAT(tok_->Encode(std::vector<Seg>{{"<", false}, {"s>a", true}}, false), Not(Contains(1)));
  // Adjacent parsing segments form one range: a token may span them.
  EXPECT_THAT(tok_->Encode(std::vector<Seg>{{"<", true}, {"s>", true}}, false), ElementsAre(1));
  // Without special text, segments encode as their joined text (fragments are not cut at
  // segment borders): same ids as one Encode with parse_special.
  const std::vector<Seg> plain = {{"a", true}, {"bc a", false}, {"", true}, {" aa", true}};
  EXPECT_EQ(tok_->Encode(plain, true), tok_->Encode("abc a aa", true, true));
  EXPECT_THAT(tok_->Encode(std::vector<Seg>{}, true), ElementsAre(1));
}

TEST_F(SyntheticTokenizerTest, DecodeRules) {
  // A leading BOS drops the prefix space of the next piece; nothing else is stripped.
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{1, P(8), P(8)}), "a a");
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{P(8), P(8)}), " a a");
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{P(1), 1, P(8)}), "a a");  // BOS mid-way: empty.
  // Control and unknown tokens and ids outside the vocabulary render as nothing.
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{0, 2, P(1), -5, 1 << 30, Byte('!')}), "a!");
  EXPECT_EQ(tok_->Piece(P(8)), Sp("a"));
  EXPECT_EQ(tok_->Piece(Byte(10)), "<0x0A>");
  EXPECT_EQ(tok_->Piece(-1), "");
}

TEST_F(SyntheticTokenizerTest, Accessors) {
  EXPECT_EQ(tok_->vocab_size(), kFirstPiece + static_cast<int32_t>(Pieces().size()));
  EXPECT_EQ(tok_->bos(), 1);
  EXPECT_EQ(tok_->eos(), 2);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_FALSE(tok_->add_eos());
  EXPECT_TRUE(tok_->IsEndOfGeneration(2));
  EXPECT_FALSE(tok_->IsEndOfGeneration(1));
  EXPECT_FALSE(tok_->IsEndOfGeneration(kNoToken));
}

TEST(TokenizerFlagsTest, AddEosNoBosNoSpacePrefixAndEot) {
  GgufWriter w = WriterFor(LlamaStyleVocab(Pieces()));
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_bos_token", false).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_eos_token", true).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_space_prefix", false).ok());
  ASSERT_TRUE(w.AddU32("tokenizer.ggml.eot_token_id", P(3)).ok());
  std::unique_ptr<Tokenizer> tok = Build(w);
  ASSERT_NE(tok, nullptr);
  EXPECT_THAT(tok->Encode("abc", true), ElementsAre(P(7), 2));
  EXPECT_THAT(tok->Encode("b a", false), ElementsAre(P(2), P(8)));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{1, P(8)}), " a");  // No prefix to strip.
  EXPECT_TRUE(tok->IsEndOfGeneration(P(3)));
}

TEST(TokenizerFallbackTest, UnkWithoutByteTokensAndUserDefinedTokens) {
  VocabSpec spec = LlamaStyleVocab({{Sp(), -1.0f}, {"a", -1.0f}, {"<tool>", 0.0f}},
                                   /*with_bytes=*/false);
  spec.types.back() = 4;  // User-defined: cut out of the text even without parse_special.
  std::unique_ptr<Tokenizer> tok = Build(WriterFor(spec));
  ASSERT_NE(tok, nullptr);
  // "é" has no piece and there are no byte tokens: one <unk> per byte.
  EXPECT_THAT(tok->Encode("a\xC3\xA9", false), ElementsAre(3, 4, 0, 0));
  EXPECT_THAT(tok->Encode("a<tool>a", false), ElementsAre(3, 4, 5, 3, 4));
  EXPECT_EQ(tok->Decode(tok->Encode("a<tool>a", true)), "a<tool> a");
  // User-defined tokens are cut out of segments without parse_special too (as from plain text).
  EXPECT_THAT(tok->Encode(std::vector<EncodeSegment>{{"a<tool>a", false}}, false),
              ElementsAre(3, 4, 5, 3, 4));
}

// --- The real model ---------------------------------------------------------------------------

class Stories260KTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = tokenizer_test::ModelsDir();
    const std::string model = dir + "/stories260K.gguf";
    golden_path_ = dir + "/stories260K.golden.json";
    if (!std::filesystem::exists(model) || !std::filesystem::exists(golden_path_)) {
      if (tokenizer_test::ModelsRequired()) {
        FAIL() << model << " not found and CI=true (set KVENGINE_MODELS_DIR)";
      }
      GTEST_SKIP() << model << " not found (set KVENGINE_MODELS_DIR to the shared models dir)";
    }
    Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(model);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value();
  }

  nlohmann::json Golden() const {
    std::ifstream in(golden_path_);
    return nlohmann::json::parse(in);
  }

  std::string golden_path_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Stories260KTokenizerTest, Metadata) {
  EXPECT_EQ(tok_->vocab_size(), 512);
  EXPECT_EQ(tok_->bos(), 1);
  EXPECT_EQ(tok_->eos(), 2);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_EQ(tok_->vocab().special.pad, kNoToken);
  EXPECT_EQ(tok_->vocab().type[3 + 0x0A], TokenType::kByte);
  EXPECT_EQ(tok_->Piece(13), "<0x0A>");
}

TEST_F(Stories260KTokenizerTest, EncodeMatchesLlamaCppPromptIds) {
  const nlohmann::json golden = Golden();
  ASSERT_GE(golden["cases"].size(), 2u);
  for (const auto& c : golden["cases"]) {
    const std::string prompt = c["prompt"];
    SCOPED_TRACE(prompt);
    EXPECT_EQ(tok_->Encode(prompt, true), c["prompt_token_ids"].get<std::vector<int32_t>>());
  }
}

TEST_F(Stories260KTokenizerTest, DecodeMatchesGoldenOutputText) {
  const nlohmann::json golden = Golden();  // Named: a temporary would die before the loop.
  for (const auto& c : golden["cases"]) {
    const std::string prompt = c["prompt"];
    SCOPED_TRACE(prompt);
    const auto prompt_ids = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto output_ids = c["output_token_ids"].get<std::vector<int32_t>>();
    const std::string output_text = c["output_text"];
    EXPECT_EQ(tok_->Decode(output_ids), output_text);
    std::vector<int32_t> all = prompt_ids;
    all.insert(all.end(), output_ids.begin(), output_ids.end());
    EXPECT_EQ(tok_->Decode(all), prompt + output_text);
  }
}

TEST_F(Stories260KTokenizerTest, RoundTripsVariedText) {
  const std::vector<std::string> texts = {
      "Once upon a time",
      "Hello, World! How are you? (fine; thanks)",
      "3.14159 + 2 = 5.14159, 1000000 100%",
      "  leading and trailing spaces   ",
      "tabs\tand\nnew\n\nlines\r\n",
      "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",  // 你好，世界
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x90\xB6 and \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7 flags",
      "<s> and </s> and <unk> are text here",
      std::string("nul\0byte", 8),
      " ",
      "x",
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    const std::vector<int32_t> ids = tok_->Encode(text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(tok_->Decode(ids), text);
  }
}

TEST_F(Stories260KTokenizerTest, ParseSpecialFindsControlTokens) {
  std::vector<int32_t> expected = {1};
  for (int32_t id : tok_->Encode("Once", false)) expected.push_back(id);
  expected.push_back(2);
  EXPECT_EQ(tok_->Encode("<s>Once</s>", false, true), expected);
  EXPECT_THAT(tok_->Encode("<s>Once</s>", false), Not(Contains(1)));
}

}  // namespace
}  // namespace kvengine
