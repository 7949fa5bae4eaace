// request_fuzz_seeds DIR: writes the seed corpus of request_fuzz into DIR: valid completions and
// chat bodies that between them use every accepted field, each behind the fuzzer's first byte
// (bit 0: chat; bit 1: tiny limits).
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/seed_corpus.h"

int main(int argc, char** argv) {
  const std::optional<std::filesystem::path> dir = kvengine::SeedCorpusDir(argc, argv);
  if (!dir) return 2;
  const std::vector<std::pair<char, std::string>> seeds = {
      {0, R"({"model": "m", "prompt": "Hello", "max_tokens": 8})"},
      {0, R"({"prompt": [1, 2, 3], "temperature": 0, "seed": 7, "n": 2, "logprobs": 3})"},
      {0, R"({"prompt": ["one"], "stop": ["\n", "END"], "stop_token_ids": [2], "top_k": 40,
              "top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.1, "ignore_eos": true})"},
      {0, R"({"prompt": [[5, 6]], "stream": true, "stream_options": {"include_usage": true},
              "cache_salt": "s", "user": "u", "add_special_tokens": false, "best_of": 1,
              "return_token_ids": true, "presence_penalty": 0, "frequency_penalty": 0})"},
      {1, R"({"messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 4})"},
      {1, R"({"messages": [{"role": "system", "content": "Be brief."},
              {"role": "developer", "content": null},
              {"role": "user", "content": [{"type": "text", "text": "a"}]},
              {"role": "assistant", "content": "b"}], "logprobs": true, "top_logprobs": 2,
              "response_format": {"type": "text"}, "stop": "x"})"},
      {2, R"({"prompt": "p", "n": 3, "stop": ["abcdef"], "logprobs": 5, "cache_salt": "long"})"},
      {3, R"({"messages": [{"role": "user", "content": "q"}], "top_logprobs": 9})"},
  };
  std::vector<std::string> bytes;
  for (const auto& [first, body] : seeds) bytes.push_back(char(first) + std::string(body));
  return kvengine::WriteSeedCorpus(*dir, bytes);
}
