// StreamDecoder: every Push returns valid UTF-8, and the pieces add up to Decode's text.
#include "tokenizer/stream_decoder.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

using tokenizer_test::LlamaStyleVocab;
using tokenizer_test::ToFile;
using tokenizer_test::WriterFor;

constexpr int32_t kA = 3 + 256;      // "a"
constexpr int32_t kSpaceA = kA + 1;  // "▁a"
int32_t ByteId(int b) { return 3 + b; }

std::unique_ptr<Tokenizer> SmallTokenizer() {
  std::unique_ptr<GgufFile> file =
      ToFile(WriterFor(LlamaStyleVocab({{"a", -1.0f}, {"\xE2\x96\x81\x61", -2.0f}})));  // "▁a"
  if (file == nullptr) return nullptr;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// Streams `ids`, checking that each chunk is valid UTF-8; returns the concatenation.
std::string StreamAll(const Tokenizer& tok, const std::vector<int32_t>& ids,
                      std::vector<std::string>* chunks = nullptr) {
  StreamDecoder decoder(tok);
  std::string all;
  for (int32_t id : ids) {
    std::string chunk = decoder.Push(id);
    EXPECT_TRUE(IsValidUtf8(chunk)) << "after id " << id;
    if (chunks != nullptr) chunks->push_back(chunk);
    all += chunk;
  }
  std::string tail = decoder.Finish();
  EXPECT_TRUE(IsValidUtf8(tail));
  if (chunks != nullptr) chunks->push_back(tail);
  return all + tail;
}

TEST(StreamDecoderTest, HoldsBackSplitCharacters) {
  std::unique_ptr<Tokenizer> tok = SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  // "a😀a" with the emoji (F0 9F 98 80) as four byte tokens.
  const std::vector<int32_t> ids = {kA, ByteId(0xF0), ByteId(0x9F), ByteId(0x98), ByteId(0x80), kA};
  std::vector<std::string> chunks;
  EXPECT_EQ(StreamAll(*tok, ids, &chunks), tok->Decode(ids));
  EXPECT_EQ(chunks, (std::vector<std::string>{"a", "", "", "", "\xF0\x9F\x98\x80", "a", ""}));
}

TEST(StreamDecoderTest, RepairsInvalidAndTruncatedBytes) {
  std::unique_ptr<Tokenizer> tok = SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  const std::string fffd(kUtf8Replacement);
  // A cut emoji followed by "a": the three bytes become one U+FFFD as soon as "a" arrives.
  std::vector<std::string> chunks;
  std::vector<int32_t> ids = {ByteId(0xF0), ByteId(0x9F), ByteId(0x98), kA};
  EXPECT_EQ(StreamAll(*tok, ids, &chunks), fffd + "a");
  EXPECT_EQ(chunks[3], fffd + "a");
  // A stray continuation byte is replaced at once; a truncated tail at Finish.
  chunks.clear();
  ids = {ByteId(0x80), kA, ByteId(0xE4), ByteId(0xB8)};
  EXPECT_EQ(StreamAll(*tok, ids, &chunks), fffd + "a" + fffd);
  EXPECT_EQ(chunks[0], fffd);
  EXPECT_EQ(chunks.back(), fffd);
  EXPECT_EQ(StreamAll(*tok, ids), SanitizeUtf8(tok->Decode(ids)));
}

TEST(StreamDecoderTest, LeadingBosDropsThePrefixSpaceLikeDecode) {
  std::unique_ptr<Tokenizer> tok = SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(StreamAll(*tok, {1, kSpaceA, kSpaceA}), "a a");
  EXPECT_EQ(StreamAll(*tok, {kSpaceA, kSpaceA}), " a a");
  // Finish resets: the same decoder starts a new stream.
  StreamDecoder decoder(*tok);
  EXPECT_EQ(decoder.Push(kSpaceA), " a");
  EXPECT_EQ(decoder.Finish(), "");
  EXPECT_EQ(decoder.Push(1), "");
  EXPECT_EQ(decoder.Push(kSpaceA), "a");
}

TEST(StreamDecoderTest, RandomIdsAlwaysValidAndEqualToSanitizedDecode) {
  std::unique_ptr<Tokenizer> tok = SmallTokenizer();
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(1234);
  // Ids from the whole vocabulary plus a few outside it; byte tokens dominate.
  std::uniform_int_distribution<int32_t> pick(-2, tok->vocab_size() + 1);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> ids(1 + trial % 23);
    for (int32_t& id : ids) id = pick(rng);
    EXPECT_EQ(StreamAll(*tok, ids), SanitizeUtf8(tok->Decode(ids))) << "trial " << trial;
  }
}

TEST(StreamDecoderTest, RealModelByteFallbackText) {
  const std::string model = tokenizer_test::ModelsDir() + "/stories260K.gguf";
  if (!std::filesystem::exists(model)) {
    if (tokenizer_test::ModelsRequired()) FAIL() << model << " not found and CI=true";
    GTEST_SKIP() << model << " not found (set KVENGINE_MODELS_DIR to the shared models dir)";
  }
  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(model);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // Emoji, CJK and accents are byte tokens in this 512-token vocabulary.
  const std::string text =
      "The dog \xF0\x9F\x90\xB6 said \xE4\xBD\xA0\xE5\xA5\xBD to the caf\xC3\xA9.\nThe end.";
  const std::vector<int32_t> ids = (*tok)->Encode(text, true);
  EXPECT_EQ(StreamAll(**tok, ids), text);
}

}  // namespace
}  // namespace kvengine
