// Byte-level BPE on small hand-made vocabularies: merge order, ignore_merges, special tokens,
// BOS/EOS defaults, metadata errors, invalid UTF-8, and randomized round trips.
#include "tokenizer/bpe.h"

#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/utf8.h"

namespace kvengine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tokenizer_test::ToFile;

// `raw` in the byte alphabet ("Ġw" for " w").
std::string B(std::string_view raw) {
  std::string s;
  AppendByteLevel(raw, &s);
  return s;
}

// Ids 0..255: the byte alphabet in byte order (so a lone byte b is token b); then kPieces in
// order; then the special tokens.
const std::vector<std::string> kPieces = {"ll", "he", "hell", "hello", " w",
                                          "aa", "bc", "ab",   "aaaa",  "xyz"};
int32_t P(std::string_view raw) {
  for (size_t i = 0; i < kPieces.size(); ++i) {
    if (kPieces[i] == raw) return 256 + static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no piece " << raw;
  return -1;
}
constexpr int32_t kEot = 266;   // "<|eot|>", control.
constexpr int32_t kTool = 267;  // "<tool>", user-defined.
constexpr int32_t kBos = 268;   // "<|bos|>", control.

// The merges of kPieces, lowest rank first; "xyz" has none (only ignore_merges finds it).
std::vector<std::pair<std::string, std::string>> DefaultMerges() {
  return {{"l", "l"}, {"h", "e"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"},
          {"a", "a"}, {"b", "c"}, {"a", "b"},   {"aa", "aa"}};
}

struct BpeSpec {
  std::string pre = "llama-bpe";
  std::vector<std::pair<std::string, std::string>> merges = DefaultMerges();
  std::vector<std::string> raw_merges;  // Added verbatim after `merges`.
};

GgufWriter Writer(const BpeSpec& spec) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) tokens.push_back(B(std::string(1, static_cast<char>(b))));
  for (const std::string& p : kPieces) tokens.push_back(B(p));
  types.assign(tokens.size(), 1);
  tokens.insert(tokens.end(), {"<|eot|>", "<tool>", "<|bos|>"});
  types.insert(types.end(), {3, 4, 3});
  std::vector<std::string> merges;
  for (const auto& [l, r] : spec.merges) merges.push_back(B(l) + " " + B(r));
  merges.insert(merges.end(), spec.raw_merges.begin(), spec.raw_merges.end());
  GgufWriter w;
  EXPECT_TRUE(w.AddString("tokenizer.ggml.model", "gpt2").ok());
  if (!spec.pre.empty()) {
    EXPECT_TRUE(w.AddString("tokenizer.ggml.pre", spec.pre).ok());
  }
  EXPECT_TRUE(w.AddStringArray("tokenizer.ggml.tokens", tokens).ok());
  EXPECT_TRUE(w.AddArray("tokenizer.ggml.token_type", std::span<const int32_t>(types)).ok());
  EXPECT_TRUE(w.AddStringArray("tokenizer.ggml.merges", merges).ok());
  EXPECT_TRUE(w.AddU32("tokenizer.ggml.bos_token_id", kBos).ok());
  EXPECT_TRUE(w.AddU32("tokenizer.ggml.eos_token_id", kEot).ok());
  return w;
}

Result<std::unique_ptr<Tokenizer>> Load(const GgufWriter& w) {
  std::unique_ptr<GgufFile> file = ToFile(w);
  if (file == nullptr) return Internal("could not write the file");
  return Tokenizer::FromGguf(*file);
}

std::unique_ptr<Tokenizer> Build(const BpeSpec& spec = {}) {
  Result<std::unique_ptr<Tokenizer>> tok = Load(Writer(spec));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::vector<int32_t> Bytes(std::string_view raw) {
  std::vector<int32_t> ids;
  for (char c : raw) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

TEST(BpeTest, MergesLowestRankFirst) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab().model, TokenizerModel::kBpe);
  // l+l (0), h+e (1), he+ll (2), hell+o (3).
  EXPECT_THAT(tok->Encode("hello", false), ElementsAre(P("hello")));
  // b+c (rank 6) before a+b (7).
  EXPECT_THAT(tok->Encode("abc", false), ElementsAre('a', P("bc")));
  BpeSpec swapped;
  swapped.merges = {{"a", "b"}, {"b", "c"}};
  auto tok2 = Build(swapped);
  ASSERT_NE(tok2, nullptr);
  EXPECT_THAT(tok2->Encode("abc", false), ElementsAre(P("ab"), 'c'));
}

TEST(BpeTest, EqualRanksMergeLeftmostFirst) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  EXPECT_THAT(tok->Encode("aaa", false), ElementsAre(P("aa"), 'a'));
  EXPECT_THAT(tok->Encode("aaaaa", false), ElementsAre(P("aaaa"), 'a'));
}

TEST(BpeTest, MergesStayInsideWords) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  // " world" is one word: Ġ+w merges; "hello" and " w" never join across the boundary.
  EXPECT_THAT(tok->Encode("hello world", false),
              ElementsAre(P("hello"), P(" w"), 'o', 'r', 'l', 'd'));
  EXPECT_EQ(tok->Decode(tok->Encode("hello world", false)), "hello world");
}

TEST(BpeTest, IgnoreMergesOnlyForLlama3) {
  auto llama = Build();
  ASSERT_NE(llama, nullptr);
  EXPECT_TRUE(llama->vocab().ignore_merges);
  EXPECT_THAT(llama->Encode("xyz", false), ElementsAre(P("xyz")));
  BpeSpec qwen;
  qwen.pre = "qwen2";
  auto tok = Build(qwen);
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(tok->vocab().ignore_merges);
  EXPECT_THAT(tok->Encode("xyz", false), ElementsAre('x', 'y', 'z'));
}

TEST(BpeTest, SpecialAndAddedTokens) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  // Control tokens only with parse_special; user-defined always.
  EXPECT_THAT(tok->Encode("a<|eot|>", false, true), ElementsAre('a', kEot));
  EXPECT_EQ(tok->Encode("a<|eot|>", false, false), Bytes("a<|eot|>"));
  EXPECT_THAT(tok->Encode("a<tool>b", false), ElementsAre('a', kTool, 'b'));
  // Decode: control renders as nothing, user-defined verbatim (not through the alphabet).
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{kBos, 'a', kEot, kTool, P(" w")}), "a<tool> w");
  EXPECT_EQ(tok->Decode(tok->Encode("x<|eot|>y<tool>", true)), "x<|eot|>y<tool>");
}

TEST(BpeTest, BosEosFromMetadata) {
  auto llama = Build();  // llama-bpe: add_bos defaults to true when there is a BOS.
  ASSERT_NE(llama, nullptr);
  EXPECT_TRUE(llama->add_bos());
  EXPECT_FALSE(llama->add_eos());
  EXPECT_THAT(llama->Encode("a", true), ElementsAre(kBos, 'a'));
  EXPECT_EQ(llama->Decode(llama->Encode(" a", true)), " a");  // No space prefix to strip.
  EXPECT_TRUE(llama->IsEndOfGeneration(kEot));

  BpeSpec qwen;
  qwen.pre = "qwen2";
  auto q = Build(qwen);  // Others default to no BOS.
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(q->add_bos());
  EXPECT_THAT(q->Encode("a", true), ElementsAre('a'));

  GgufWriter w = Writer(qwen);
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_bos_token", true).ok());
  ASSERT_TRUE(w.AddBool("tokenizer.ggml.add_eos_token", true).ok());
  Result<std::unique_ptr<Tokenizer>> both = Load(w);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_THAT((*both)->Encode("a", true), ElementsAre(kBos, 'a', kEot));
}

TEST(BpeTest, MetadataErrorsNameTheKey) {
  BpeSpec unknown_pre;
  unknown_pre.pre = "mystery-pre";
  Result<std::unique_ptr<Tokenizer>> r = Load(Writer(unknown_pre));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("\"mystery-pre\""));

  BpeSpec no_space;
  no_space.raw_merges = {"ab"};
  r = Load(Writer(no_space));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("tokenizer.ggml.merges[9]"));

  GgufWriter no_merges;
  ASSERT_TRUE(no_merges.AddString("tokenizer.ggml.model", "gpt2").ok());
  ASSERT_TRUE(
      no_merges.AddStringArray("tokenizer.ggml.tokens", std::vector<std::string>{"a"}).ok());
  r = Load(no_merges);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("tokenizer.ggml.merges"));
}

TEST(BpeTest, MissingPreMeansDefaultAndUselessMergesAreSkipped) {
  BpeSpec spec;
  spec.pre = "";  // Absent: "default", i.e. the GPT-2 regex.
  // Unknown parts, an unknown result, and a repeated pair at a worse rank: all ignored.
  spec.raw_merges = {"q7 x", B("x") + " " + B("q"), B("l") + " " + B("l")};
  auto tok = Build(spec);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab().pre, PreTokenizer::kGpt2);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->vocab().merges.size(), DefaultMerges().size());
  const BpeMerge* ll = tok->vocab().FindMerge('l', 'l');
  ASSERT_NE(ll, nullptr);
  EXPECT_EQ(ll->rank, 0);
  EXPECT_EQ(ll->result, P("ll"));
  EXPECT_EQ(tok->vocab().FindMerge('x', 'q'), nullptr);
}

TEST(BpeTest, InvalidUtf8BytesBecomeReplacementCharacters) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  // \xFF -> U+FFFD (EF BF BD), which joins the letter after it ([^\r\n\p{L}\p{N}]?\p{L}+).
  EXPECT_THAT(tok->Encode("a\xFF"
                          "b",
                          false),
              ElementsAre('a', 0xEF, 0xBF, 0xBD, 'b'));
  // A truncated character: one U+FFFD per byte.
  EXPECT_EQ(tok->Decode(tok->Encode("x\xE4\xBD", false)),
            "x" + std::string(kUtf8Replacement) + std::string(kUtf8Replacement));
}

TEST(BpeTest, CharactersOutsideTheVocabularyBecomeUnknownOrVanish) {
  GgufWriter w;
  ASSERT_TRUE(w.AddString("tokenizer.ggml.model", "gpt2").ok());
  ASSERT_TRUE(
      w.AddStringArray("tokenizer.ggml.tokens", std::vector<std::string>{"a", "<unk>"}).ok());
  ASSERT_TRUE(w.AddStringArray("tokenizer.ggml.merges", std::vector<std::string>{}).ok());
  Result<std::unique_ptr<Tokenizer>> dropped = Load(w);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_THAT((*dropped)->Encode("aza", false), ElementsAre(0, 0));
  ASSERT_TRUE(w.AddU32("tokenizer.ggml.unknown_token_id", 1).ok());
  Result<std::unique_ptr<Tokenizer>> unk = Load(w);
  ASSERT_TRUE(unk.ok()) << unk.status().ToString();
  EXPECT_THAT((*unk)->Encode("aza", false), ElementsAre(0, 1, 0));
}

TEST(BpeTest, StreamDecoderJoinsByteTokens) {
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  const std::string wave = "\xF0\x9F\x91\x8B";  // 👋: four byte tokens.
  const std::vector<int32_t> ids = tok->Encode(wave, false);
  ASSERT_EQ(ids.size(), 4u);
  StreamDecoder stream(*tok);
  std::string out;
  for (int32_t id : ids) out += stream.Push(id);
  EXPECT_EQ(out, wave);
  EXPECT_EQ(stream.Finish(), "");
}

// Random text from a mix of scripts, spaces, digits, apostrophes and emoji.
std::string RandomText(std::mt19937& rng) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kRanges = {
      {'a', 'z'},         {'A', 'Z'},         {'0', '9'},       {' ', ' '},       {'\n', '\n'},
      {'\t', '\r'},       {'\'', '\''},       {'!', '/'},       {0xA0, 0x17F},    {0x300, 0x36F},
      {0x391, 0x3C9},     {0x400, 0x44F},     {0x660, 0x669},   {0x3000, 0x303F}, {0x4E00, 0x4FFF},
      {0x1F300, 0x1F6FF}, {0x1F3FB, 0x1F3FF}, {0x200D, 0x200D}, {0x80, 0x10FFFF}};
  std::uniform_int_distribution<size_t> len_dist(0, 40);
  std::uniform_int_distribution<size_t> range_dist(0, kRanges.size() - 1);
  std::string s;
  const size_t len = len_dist(rng);
  for (size_t i = 0; i < len; ++i) {
    const auto [lo, hi] = kRanges[range_dist(rng)];
    uint32_t cp = std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';  // No surrogates in valid UTF-8.
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      s += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
            static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      s += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
            static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
  }
  return s;
}

TEST(BpeFuzzTest, RandomValidUtf8RoundTrips) {
  std::mt19937 rng(12345);
  for (const char* pre : {"llama-bpe", "qwen2", "gpt2"}) {
    BpeSpec spec;
    spec.pre = pre;
    auto tok = Build(spec);
    ASSERT_NE(tok, nullptr);
    for (int i = 0; i < 2000; ++i) {
      const std::string text = RandomText(rng);
      ASSERT_TRUE(IsValidUtf8(text));
      for (bool parse_special : {false, true}) {
        const std::vector<int32_t> ids = tok->Encode(text, true, parse_special);
        ASSERT_EQ(tok->Decode(ids), text) << pre << " #" << i;
      }
    }
  }
}

TEST(BpeFuzzTest, RandomBytesNeverCrashAndDecodeAsRepaired) {
  std::mt19937 rng(777);
  auto tok = Build();
  ASSERT_NE(tok, nullptr);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(std::uniform_int_distribution<size_t>(0, 24)(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    // The expected text: every byte outside a well-formed character is one U+FFFD.
    std::string expected;
    for (size_t pos = 0; pos < bytes.size();) {
      const Utf8ScanResult r = ScanUtf8(bytes, pos);
      if (r.scan == Utf8Scan::kValid) {
        expected.append(bytes, pos, r.length);
        pos += r.length;
      } else {
        expected.append(kUtf8Replacement);
        ++pos;
      }
    }
    ASSERT_EQ(tok->Decode(tok->Encode(bytes, false)), expected) << "#" << i;
  }
}

}  // namespace
}  // namespace kvengine
