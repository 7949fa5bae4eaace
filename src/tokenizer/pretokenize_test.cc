// The pre-tokenizer regexes, branch by branch, against what the regex engines of Hugging Face
// tokenizers (and llama.cpp) produce.
#include "tokenizer/pretokenize.h"

#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvengine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using W = std::vector<std::string>;

W Words(PreTokenizer p, std::string_view text) {
  W out;
  for (std::string_view w : PreTokenize(p, text)) out.emplace_back(w);
  return out;
}
W Gpt2(std::string_view t) { return Words(PreTokenizer::kGpt2, t); }
W Llama3(std::string_view t) { return Words(PreTokenizer::kLlama3, t); }
W Qwen2(std::string_view t) { return Words(PreTokenizer::kQwen2, t); }

TEST(PreTokenizerNameTest, KnownAndUnknown) {
  EXPECT_EQ(*ParsePreTokenizer("llama-bpe"), PreTokenizer::kLlama3);
  EXPECT_EQ(*ParsePreTokenizer("llama3"), PreTokenizer::kLlama3);
  EXPECT_EQ(*ParsePreTokenizer("qwen2"), PreTokenizer::kQwen2);
  EXPECT_EQ(*ParsePreTokenizer("gpt2"), PreTokenizer::kGpt2);
  EXPECT_EQ(*ParsePreTokenizer("default"), PreTokenizer::kGpt2);
  Result<PreTokenizer> bad = ParsePreTokenizer("starcoder");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"starcoder\""));
  EXPECT_EQ(PreTokenizerName(PreTokenizer::kQwen2), "qwen2");
}

TEST(Gpt2PreTokenizerTest, LettersNumbersPunctuationWithOptionalSpace) {
  EXPECT_THAT(Gpt2("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(Gpt2("abc 12345 x"), ElementsAre("abc", " 12345", " x"));
  EXPECT_THAT(Gpt2("a, b!! (c)"), ElementsAre("a", ",", " b", "!!", " (", "c", ")"));
  EXPECT_THAT(Gpt2("x1y"), ElementsAre("x", "1", "y"));
  EXPECT_THAT(Gpt2("\tfoo"), ElementsAre("\t", "foo"));  // Only U+0020 is the optional space.
}

TEST(Gpt2PreTokenizerTest, ContractionsAreCaseSensitive) {
  EXPECT_THAT(Gpt2("I'm don't we'll"), ElementsAre("I", "'m", " don", "'t", " we", "'ll"));
  EXPECT_THAT(Gpt2("DON'T"), ElementsAre("DON", "'", "T"));
  EXPECT_THAT(Gpt2("'steve"), ElementsAre("'s", "teve"));
}

TEST(Gpt2PreTokenizerTest, WhitespaceRuns) {
  // \s+(?!\S): a run before a word gives up its last space to the word.
  EXPECT_THAT(Gpt2("a   b"), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(Gpt2("a  "), ElementsAre("a", "  "));  // At the end: the whole run.
  EXPECT_THAT(Gpt2("a\n\nb"), ElementsAre("a", "\n", "\n", "b"));
  EXPECT_THAT(Gpt2(" "), ElementsAre(" "));
  EXPECT_THAT(Gpt2("\t1"), ElementsAre("\t", "1"));  // \s+ alone.
}

TEST(Llama3PreTokenizerTest, ContractionsIgnoreCase) {
  EXPECT_THAT(Llama3("DON'T I'M we'Ll"), ElementsAre("DON", "'T", " I", "'M", " we", "'Ll"));
  EXPECT_THAT(Llama3("'RE're'x"), ElementsAre("'RE", "'re", "'x"));
}

TEST(Llama3PreTokenizerTest, OneNonLetterJoinsTheLettersAfterIt) {
  EXPECT_THAT(Llama3("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(Llama3("\tfoo"), ElementsAre("\tfoo"));
  EXPECT_THAT(Llama3("a.b"), ElementsAre("a", ".b"));
  EXPECT_THAT(Llama3("..b"), ElementsAre("..", "b"));  // ".b" would need alt 2 at the first ".".
  EXPECT_THAT(Llama3("\nfoo"), ElementsAre("\n", "foo"));  // But not CR or LF.
  // A combining mark (Mn) is not a letter: it leads the letters after it.
  EXPECT_THAT(Llama3("cafe\xCC\x81s"), ElementsAre("cafe", "\xCC\x81s"));
  // NBSP is whitespace but neither CR nor LF, so it joins too.
  EXPECT_THAT(Llama3("a\xC2\xA0"
                     "b"),
              ElementsAre("a",
                          "\xC2\xA0"
                          "b"));
}

TEST(Llama3PreTokenizerTest, DigitsInGroupsOfThreeQwenOneByOne) {
  EXPECT_THAT(Llama3("12345"), ElementsAre("123", "45"));
  EXPECT_THAT(Llama3("x 1234567"), ElementsAre("x", " ", "123", "456", "7"));
  EXPECT_THAT(Qwen2("1234"), ElementsAre("1", "2", "3", "4"));
  // Other numbers (No, Nl, Nd of other scripts) count too.
  EXPECT_THAT(Llama3("\xC2\xBD\xE2\x85\xAB\xD9\xA3\xD9\xA4"),  // ½ Ⅻ ٣ ٤
              ElementsAre("\xC2\xBD\xE2\x85\xAB\xD9\xA3", "\xD9\xA4"));
}

TEST(Llama3PreTokenizerTest, PunctuationTakesOneSpaceAndTrailingNewlines) {
  EXPECT_THAT(Llama3("x ...\n\ny"), ElementsAre("x", " ...\n\n", "y"));
  EXPECT_THAT(Llama3("a  !"), ElementsAre("a", " ", " !"));
  EXPECT_THAT(Llama3("f(x);\r\n}"), ElementsAre("f", "(x", ");\r\n", "}"));
}

TEST(Llama3PreTokenizerTest, WhitespaceAndNewlines) {
  // \s*[\r\n]+ ends at the last newline of a whitespace run.
  EXPECT_THAT(Llama3("a\n\n  b"), ElementsAre("a", "\n\n", " ", " b"));
  EXPECT_THAT(Llama3("x  \n  y"), ElementsAre("x", "  \n", " ", " y"));
  EXPECT_THAT(Llama3("\r\nabc"), ElementsAre("\r\n", "abc"));
  EXPECT_THAT(Llama3("a \n"), ElementsAre("a", " \n"));
  // \s+(?!\S) and \s+.
  EXPECT_THAT(Llama3("a   b"), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(Llama3("end   "), ElementsAre("end", "   "));
  EXPECT_THAT(Llama3(" 1"), ElementsAre(" ", "1"));
  EXPECT_THAT(Llama3("\t\t1"), ElementsAre("\t", "\t", "1"));
}

TEST(Llama3PreTokenizerTest, ScriptsAndEmoji) {
  // Han, kana: letters (Lo); the ideographic full stop is punctuation.
  EXPECT_THAT(Llama3("\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82\xE3\x81\x82"),  // 你好。あ
              ElementsAre("\xE4\xBD\xA0\xE5\xA5\xBD", "\xE3\x80\x82\xE3\x81\x82"));
  // 👋🏽 (So + Sk) and '!' form one run of "other"; the space before it joins.
  EXPECT_THAT(Llama3("hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"),
              ElementsAre("hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"));
}

TEST(PreTokenizerTest, WordsCoverTheText) {
  const std::string text = "It's 2024!\n\n  Caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87\t\t99   ";
  for (PreTokenizer p : {PreTokenizer::kGpt2, PreTokenizer::kLlama3, PreTokenizer::kQwen2}) {
    std::string joined;
    for (const std::string& w : Words(p, text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    EXPECT_EQ(joined, text) << PreTokenizerName(p);
  }
  EXPECT_TRUE(Llama3("").empty());
}

}  // namespace
}  // namespace kvengine
