// Vocabulary loading: defaults, the indexes it builds, and hostile or malformed metadata, each
// rejected with an error that names the key.
#include "tokenizer/vocab.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/vocab_fuzz_format.h"

namespace kvengine {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::LlamaStyleVocab;
using tokenizer_test::ToFile;
using tokenizer_test::VocabSpec;
using tokenizer_test::WriterFor;

// Loads `writer`'s metadata and returns the error message ("" when it loads).
std::string LoadError(const GgufWriter& writer) {
  std::unique_ptr<GgufFile> file = ToFile(writer);
  if (file == nullptr) return "could not write the file";
  Result<Vocab> vocab = LoadVocab(*file);
  return vocab.ok() ? "" : vocab.status().message();
}

// A writer with only the keys given (no defaults added).
GgufWriter Bare(const std::vector<std::string>& tokens) {
  GgufWriter w;
  EXPECT_TRUE(w.AddString("tokenizer.ggml.model", "llama").ok());
  EXPECT_TRUE(w.AddStringArray("tokenizer.ggml.tokens", tokens).ok());
  return w;
}

TEST(VocabTest, LoadsSpecAndBuildsIndexes) {
  VocabSpec spec = LlamaStyleVocab({{"\xE2\x96\x81\x61", -1.0f}, {"b", -2.0f}});
  std::unique_ptr<GgufFile> file = ToFile(WriterFor(spec));
  ASSERT_NE(file, nullptr);
  Result<Vocab> v = LoadVocab(*file);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->size(), 3 + 256 + 2);
  EXPECT_EQ(v->special.bos, 1);
  EXPECT_EQ(v->special.eos, 2);
  EXPECT_EQ(v->special.unk, 0);
  EXPECT_EQ(v->special.pad, kNoToken);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_EQ(v->Find("b"), 3 + 256 + 1);
  EXPECT_EQ(v->Find("<0x41>"), 3 + 0x41);
  EXPECT_EQ(v->Find("zz"), kNoToken);
  EXPECT_EQ(v->byte_to_token['A'], 3 + 0x41);
  EXPECT_EQ(v->byte_value[3 + 0xFF], 0xFF);
  EXPECT_EQ(v->byte_value[1], -1);
  EXPECT_EQ(v->max_token_bytes, 6u);
  // "<unk>" (5 bytes) before "</s>" (4) before "<s>" (3).
  EXPECT_EQ(v->special_ids_by_length, (std::vector<int32_t>{0, 2, 1}));
}

TEST(VocabTest, DefaultsWhenOptionalKeysAreAbsent) {
  std::unique_ptr<GgufFile> file = ToFile(Bare({"<unk>", "<s>", "</s>", "a"}));
  ASSERT_NE(file, nullptr);
  Result<Vocab> v = LoadVocab(*file);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->special.unk, 0);
  EXPECT_EQ(v->special.bos, 1);
  EXPECT_EQ(v->special.eos, 2);
  EXPECT_EQ(v->score[3], 0.0f);
  EXPECT_EQ(v->type[3], TokenType::kNormal);
  EXPECT_EQ(v->byte_to_token['x'], 0);  // No byte tokens: every byte falls back to <unk>.
  EXPECT_EQ(v->byte_to_token['a'], 3);  // ... except one whose single-byte text is a token.
}

TEST(VocabTest, DuplicateTextsResolveToTheHighestId) {
  std::unique_ptr<GgufFile> file = ToFile(Bare({"<unk>", "<s>", "</s>", "x", "y", "x"}));
  ASSERT_NE(file, nullptr);
  Result<Vocab> v = LoadVocab(*file);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Find("x"), 5);
}

TEST(VocabTest, NoneSentinelsAndFlags) {
  GgufWriter w = WriterFor(LlamaStyleVocab({}));
  ASSERT_TRUE(w.AddU32("tokenizer.ggml.padding_token_id", kNoTokenU32).ok());
  ASSERT_TRUE(w.AddI32("tokenizer.ggml.seperator_token_id", -1).ok());
  ASSERT_TRUE(w.AddU32("tokenizer.ggml.eot_token_id", 2).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_bos_token", false).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_eos_token", true).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_space_prefix", false).ok());
  std::unique_ptr<GgufFile> file = ToFile(w);
  ASSERT_NE(file, nullptr);
  Result<Vocab> v = LoadVocab(*file);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->special.pad, kNoToken);
  EXPECT_EQ(v->special.sep, kNoToken);
  EXPECT_EQ(v->special.eot, 2);
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
}

TEST(VocabTest, RejectsMissingOrForeignTokenizer) {
  GgufWriter no_model;
  ASSERT_TRUE(no_model.AddStringArray("tokenizer.ggml.tokens", std::vector<std::string>{"a"}).ok());
  EXPECT_THAT(LoadError(no_model), HasSubstr("tokenizer.ggml.model"));

  GgufWriter bert;  // "gpt2" is supported (bpe_test.cc); "bert" (WordPiece) is not.
  ASSERT_TRUE(bert.AddString("tokenizer.ggml.model", "bert").ok());
  EXPECT_THAT(LoadError(bert), HasSubstr("\"bert\""));

  GgufWriter no_tokens;
  ASSERT_TRUE(no_tokens.AddString("tokenizer.ggml.model", "llama").ok());
  EXPECT_THAT(LoadError(no_tokens), HasSubstr("tokenizer.ggml.tokens"));

  EXPECT_THAT(LoadError(Bare({})), HasSubstr("tokenizer.ggml.tokens has 0 entries"));

  GgufWriter wrong_type;
  ASSERT_TRUE(wrong_type.AddString("tokenizer.ggml.model", "llama").ok());
  ASSERT_TRUE(wrong_type.AddString("tokenizer.ggml.tokens", "abc").ok());
  EXPECT_THAT(LoadError(wrong_type), HasSubstr("tokenizer.ggml.tokens"));
}

TEST(VocabTest, RejectsLengthMismatches) {
  VocabSpec spec = LlamaStyleVocab({{"a", 0.0f}});
  VocabSpec short_scores = spec;
  short_scores.scores.pop_back();
  EXPECT_THAT(LoadError(WriterFor(short_scores)),
              HasSubstr("tokenizer.ggml.scores has 259 entries but tokenizer.ggml.tokens has 260"));
  VocabSpec long_types = spec;
  long_types.types.push_back(1);
  EXPECT_THAT(LoadError(WriterFor(long_types)), HasSubstr("tokenizer.ggml.token_type has 261"));
}

TEST(VocabTest, RejectsBadValues) {
  VocabSpec nan_score = LlamaStyleVocab({{"a", std::numeric_limits<float>::quiet_NaN()}});
  EXPECT_THAT(LoadError(WriterFor(nan_score)), HasSubstr("tokenizer.ggml.scores[259] is NaN"));

  VocabSpec bad_type = LlamaStyleVocab({{"a", 0.0f}});
  bad_type.types.back() = 7;
  EXPECT_THAT(LoadError(WriterFor(bad_type)), HasSubstr("tokenizer.ggml.token_type[259] is 7"));

  VocabSpec bad_byte = LlamaStyleVocab({});
  bad_byte.tokens[3 + 5] = "<0xZZ>";
  EXPECT_THAT(LoadError(WriterFor(bad_byte)), HasSubstr("tokenizer.ggml.tokens[8]"));

  VocabSpec long_token = LlamaStyleVocab({{std::string(kMaxTokenBytes + 1, 'x'), 0.0f}});
  EXPECT_THAT(LoadError(WriterFor(long_token)), HasSubstr("tokenizer.ggml.tokens[259] is 1025"));
}

TEST(VocabTest, RejectsSpecialIdsOutOfRange) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.padding_token_id"}) {
    GgufWriter w = Bare({"<unk>", "<s>", "</s>"});
    ASSERT_TRUE(w.AddU32(key, 3).ok());
    EXPECT_THAT(LoadError(w), HasSubstr(std::string(key) + " is 3, outside the vocabulary"));
  }
  GgufWriter negative = Bare({"<unk>", "<s>", "</s>"});
  ASSERT_TRUE(negative.AddI32("tokenizer.ggml.eos_token_id", -7).ok());
  EXPECT_THAT(LoadError(negative), HasSubstr("tokenizer.ggml.eos_token_id is -7"));

  GgufWriter wrong_type = Bare({"<unk>", "<s>", "</s>"});
  ASSERT_TRUE(wrong_type.AddString("tokenizer.ggml.unknown_token_id", "0").ok());
  EXPECT_THAT(LoadError(wrong_type), HasSubstr("tokenizer.ggml.unknown_token_id"));
}

TEST(VocabTest, RejectsInconsistentSpecialTokens) {
  // add_bos_token without a BOS token in the vocabulary (the default id 1 is out of range).
  GgufWriter no_bos = Bare({"<unk>"});
  ASSERT_TRUE(no_bos.AddBool("tokenizer.ggml.add_bos_token", true).ok());
  EXPECT_THAT(LoadError(no_bos), HasSubstr("tokenizer.ggml.add_bos_token is true"));

  GgufWriter bool_as_string = Bare({"<unk>", "<s>", "</s>"});
  ASSERT_TRUE(bool_as_string.AddString("tokenizer.ggml.add_eos_token", "yes").ok());
  EXPECT_THAT(LoadError(bool_as_string), HasSubstr("tokenizer.ggml.add_eos_token"));

  // No byte tokens and no <unk>: some bytes could not be encoded at all.
  GgufWriter no_unk = Bare({"<unk>", "<s>", "</s>"});
  ASSERT_TRUE(no_unk.AddU32("tokenizer.ggml.unknown_token_id", kNoTokenU32).ok());
  EXPECT_THAT(LoadError(no_unk), HasSubstr("tokenizer.ggml.unknown_token_id"));
}

// vocab_fuzz's input format (vocab_fuzz_format.h): what the seed writer encodes decodes to the
// same vocabulary, merges and text, even with types whose byte collides with the separators,
// and the GGUF it describes loads.
TEST(VocabFuzzFormatTest, RoundTripsAndLoads) {
  vocab_fuzz::Input in;
  in.flags = 0x02 | 0x08 | 0x40 | 0x80;  // llama, add_bos, space prefix, unk key, scores.
  in.bos = 1;
  in.eos = 2;
  in.unk = 0;
  in.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a", "b"};
  in.types = {2, 3, 3, 1, 1, 1};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    in.tokens.push_back(hex);
    in.types.push_back(6);
  }
  in.merges = {"a b", "c d"};
  in.text = "a b\x01\x00ab";
  const std::optional<vocab_fuzz::Input> back = vocab_fuzz::Decode(vocab_fuzz::Encode(in));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->flags, in.flags);
  EXPECT_EQ(back->bos, in.bos);
  EXPECT_EQ(back->unk, in.unk);
  EXPECT_EQ(back->tokens, in.tokens);
  EXPECT_EQ(back->types, in.types);
  EXPECT_EQ(back->merges, in.merges);
  EXPECT_EQ(back->text, in.text);
  Result<std::vector<uint8_t>> bytes = vocab_fuzz::ToGguf(*back);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes);
  ASSERT_TRUE(file.ok()) << file.status().message();
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->vocab_size(), int32_t(in.tokens.size()));
  EXPECT_EQ((*tok)->Encode("a", true), (std::vector<int32_t>{1, 3}));
  EXPECT_FALSE(vocab_fuzz::Decode("abc").has_value());
}

}  // namespace
}  // namespace kvengine
