// The input format of vocab_fuzz (libFuzzer) and its seed writer: bytes that describe a GGUF
// tokenizer (tokenizer.ggml.* metadata, vocab.h) and a text to tokenize with it. Structured so
// that mutations change vocabularies, merges and texts rather than break the GGUF container
// (gguf_fuzz covers the container).
//
//   byte 0   flags: bit 0 "gpt2" (else "llama"); bit 1 add_bos_token; bit 2 add_eos_token;
//            bit 3 add_space_prefix; bits 4-5 tokenizer.ggml.pre (none, "llama-bpe", "qwen2",
//            "gpt2"); bit 6 an unknown_token_id key; bit 7 scores present
//   byte 1-3 bos, eos and unknown token ids (each may lie outside the vocabulary)
//   then     TOKENS 0x01 MERGES 0x01 TEXT
//   TOKENS   entries separated by 0x00, each a type byte (type 1 + byte % 6; the seeds write
//            '0' + type - 1) and the token text; scores are -index
//   MERGES   entries separated by 0x00 ("left right"; gpt2 only)
//   TEXT     the rest: encoded with every add_special / parse_special combination
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_writer.h"

namespace kvengine::vocab_fuzz {

struct Input {
  uint8_t flags = 0;
  uint8_t bos = 0, eos = 0, unk = 0;
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  std::string text;
};

inline std::vector<std::string> SplitOn(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// nullopt when the bytes are too short to hold the header.
inline std::optional<Input> Decode(std::string_view bytes) {
  if (bytes.size() < 4) return std::nullopt;
  Input in;
  in.flags = uint8_t(bytes[0]);
  in.bos = uint8_t(bytes[1]);
  in.eos = uint8_t(bytes[2]);
  in.unk = uint8_t(bytes[3]);
  std::string_view rest = bytes.substr(4);
  const size_t a = rest.find('\x01');
  const std::string_view tokens = rest.substr(0, a);
  std::string_view merges, text;
  if (a != std::string_view::npos) {
    rest = rest.substr(a + 1);
    const size_t b = rest.find('\x01');
    merges = rest.substr(0, b);
    if (b != std::string_view::npos) text = rest.substr(b + 1);
  }
  for (const std::string& e : SplitOn(tokens, '\0')) {
    in.types.push_back(e.empty() ? 1 : 1 + uint8_t(e[0]) % 6);
    in.tokens.push_back(e.empty() ? e : e.substr(1));
  }
  in.merges = SplitOn(merges, '\0');
  in.text = std::string(text);
  return in;
}

inline std::string Encode(const Input& in) {
  std::string s;
  s += char(in.flags);
  s += char(in.bos);
  s += char(in.eos);
  s += char(in.unk);
  for (size_t i = 0; i < in.tokens.size(); ++i) {
    if (i > 0) s += '\0';
    s += char('0' + (in.types[i] - 1) % 6);  // '0' % 6 == 0: decodes to the same type.
    s += in.tokens[i];
  }
  s += '\x01';
  for (size_t i = 0; i < in.merges.size(); ++i) {
    if (i > 0) s += '\0';
    s += in.merges[i];
  }
  s += '\x01';
  s += in.text;
  return s;
}

// The GGUF metadata the input describes (a writer error is returned as is).
inline Result<std::vector<uint8_t>> ToGguf(const Input& in) {
  GgufWriter w;
  const bool gpt2 = in.flags & 1;
  KV_RETURN_IF_ERROR(w.AddString("tokenizer.ggml.model", gpt2 ? "gpt2" : "llama"));
  KV_RETURN_IF_ERROR(w.AddStringArray("tokenizer.ggml.tokens", in.tokens));
  KV_RETURN_IF_ERROR(w.AddArray("tokenizer.ggml.token_type", std::span<const int32_t>(in.types)));
  if (in.flags & 0x80) {
    std::vector<float> scores(in.tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    KV_RETURN_IF_ERROR(w.AddArray("tokenizer.ggml.scores", std::span<const float>(scores)));
  }
  KV_RETURN_IF_ERROR(w.AddBool("tokenizer.ggml.add_bos_token", in.flags & 2));
  KV_RETURN_IF_ERROR(w.AddBool("tokenizer.ggml.add_eos_token", in.flags & 4));
  KV_RETURN_IF_ERROR(w.AddBool("tokenizer.ggml.add_space_prefix", in.flags & 8));
  static constexpr const char* kPre[] = {nullptr, "llama-bpe", "qwen2", "gpt2"};
  if (const char* pre = kPre[(in.flags >> 4) & 3]) {
    KV_RETURN_IF_ERROR(w.AddString("tokenizer.ggml.pre", pre));
  }
  KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.bos_token_id", in.bos));
  KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.eos_token_id", in.eos));
  if (in.flags & 0x40) KV_RETURN_IF_ERROR(w.AddU32("tokenizer.ggml.unknown_token_id", in.unk));
  if (gpt2) KV_RETURN_IF_ERROR(w.AddStringArray("tokenizer.ggml.merges", in.merges));
  return w.WriteToBytes();
}

}  // namespace kvengine::vocab_fuzz
