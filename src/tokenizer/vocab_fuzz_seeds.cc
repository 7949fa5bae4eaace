// vocab_fuzz_seeds DIR: writes the seed corpus of vocab_fuzz (vocab_fuzz_format.h) into DIR: a
// SentencePiece vocabulary with byte tokens (the synthetic models' own), a byte-level BPE one
// with merges for each pre-tokenizer, and special tokens in the texts.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/seed_corpus.h"
#include "synth/synthetic_vocab.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/vocab_fuzz_format.h"

namespace kvengine {
namespace {

using vocab_fuzz::Input;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4;

Input Spm(uint8_t flags, std::string text) {
  const SyntheticVocab v = MakeSyntheticVocab(400);
  Input in;
  in.flags = flags;
  in.bos = kSynthBosId;
  in.eos = kSynthEosId;
  in.unk = kSynthUnkId;
  in.tokens = v.tokens;
  in.types = v.types;
  in.text = std::move(text);
  return in;
}

// Special tokens first (ids 0-2: BOS, EOS and a user-defined one), the 256 byte-alphabet
// characters, then a few merged pieces with their merges.
Input Bpe(uint8_t flags, std::string text) {
  Input in;
  in.flags = flags;
  in.tokens = {"<|begin_of_text|>", "<|im_end|>", "<tool>"};
  in.types = {kControl, kControl, kUserDefined};
  in.bos = 0;
  in.eos = 1;
  for (int b = 0; b < 256; ++b) {
    std::string piece;
    AppendByteLevel(std::string(1, char(b)), &piece);
    in.tokens.push_back(piece);
    in.types.push_back(kNormal);
  }
  std::string space;
  AppendByteLevel(" ", &space);
  const std::vector<std::string> merges = {"h e",  "l l",   "he ll",  "hell o",    "w o",
                                           "wo r", "wor l", "worl d", space + " w"};
  for (const std::string& m : merges) {
    in.merges.push_back(m);
    std::string merged = m;
    merged.erase(merged.find(' '), 1);
    in.tokens.push_back(merged);
    in.types.push_back(kNormal);
  }
  in.text = std::move(text);
  return in;
}

}  // namespace
}  // namespace kvengine

int main(int argc, char** argv) {
  using namespace kvengine;  // NOLINT: a tool's main.
  const std::optional<std::filesystem::path> dir = SeedCorpusDir(argc, argv);
  if (!dir) return 2;
  const std::string text = "Hello world, h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C 12345!\n\tend";
  const std::vector<vocab_fuzz::Input> seeds = {
      Spm(0x02 | 0x08 | 0x40 | 0x80, text),
      Spm(0x04 | 0x40, "<s>a b</s> <0x41>"),
      Bpe(0x01 | 0x10, "hello world<|begin_of_text|> x<tool>y"),
      Bpe(0x01 | 0x20, text + "<|im_end|>"),
      Bpe(0x01 | 0x30 | 0x02, "  hello\n\nworld 's 'll 123456"),
  };
  std::vector<std::string> bytes;
  for (const vocab_fuzz::Input& seed : seeds) bytes.push_back(vocab_fuzz::Encode(seed));
  return WriteSeedCorpus(*dir, bytes);
}
