// libFuzzer target: tokenizer vocabularies and texts (vocab_fuzz_format.h) through
// Tokenizer::FromGguf, Encode, Decode and StreamDecoder. A rejected vocabulary must carry a
// message. An accepted one must encode every text, with every add_special / parse_special
// combination, to ids inside the vocabulary (BOS first where the metadata asks for it), and the
// stream decoder's output must equal SanitizeUtf8(Decode(ids)) and be valid UTF-8
// (stream_decoder.h). Any violation traps, which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gguf/gguf_reader.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_fuzz_format.h"

namespace kvengine {
namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

void CheckText(const Tokenizer& tok, std::string_view text) {
  for (int mode = 0; mode < 4; ++mode) {
    const bool add_special = mode & 1, parse_special = mode & 2;
    const std::vector<int32_t> ids = tok.Encode(text, add_special, parse_special);
    for (int32_t id : ids) Require(id >= 0 && id < tok.vocab_size());
    if (add_special && tok.add_bos() && tok.bos() >= 0)
      Require(!ids.empty() && ids[0] == tok.bos());
    const std::string decoded = tok.Decode(ids);
    StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.Push(id);
    streamed += stream.Finish();
    Require(IsValidUtf8(streamed));
    Require(streamed == SanitizeUtf8(decoded));
  }
}

}  // namespace
}  // namespace kvengine

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvengine;  // NOLINT: fuzzer entry point.
  const std::optional<vocab_fuzz::Input> in =
      vocab_fuzz::Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!in) return 0;
  Result<std::vector<uint8_t>> bytes = vocab_fuzz::ToGguf(*in);
  if (!bytes.ok()) return 0;  // The writer refused (a limit); the reader is gguf_fuzz's.
  Result<std::unique_ptr<GgufFile>> file = GgufFile::FromBytes(*bytes);
  Require(file.ok());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    Require(!tok.status().message().empty());
    return 0;
  }
  Require((*tok)->vocab_size() == int32_t(in->tokens.size()));
  CheckText(**tok, in->text);
  return 0;
}
