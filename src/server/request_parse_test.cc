// The bad-input table: every malformed or out-of-range request gets a 400 naming its field,
// never a crash; and well-formed requests map to the engine's RequestParams as documented.
#include "server/request_parse.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "server/prompt_build.h"
#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

struct BadCase {
  Endpoint endpoint;
  std::string body;
  std::string param;  // Expected `param` ("" = null).
};

constexpr Endpoint kC = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChat;

TEST(RequestParseTest, BadInputsAre400sNamingTheField) {
  const BadCase cases[] = {
      {kC, "", ""},
      {kC, "{", ""},
      {kC, "{\"prompt\": \"a\",}", ""},
      {kC, "[1, 2]", ""},
      {kC, "\"text\"", ""},
      {kC, "{\"prompt\": \"\xff\xfe\"}", ""},  // Invalid UTF-8.
      {kC, "{\"prompt\": \"\xc0\xaf\"}", ""},  // Overlong encoding.
      {kC, "{\"prompt\": \"\\ud800\"}", ""},   // Lone surrogate escape.
      {kC, "{\"prompt\": \"a\", \"temperature\": NaN}", ""},
      {kC, "{\"prompt\": \"a\", \"temperature\": 1e400}", ""},
      {kC, "{}", "prompt"},
      {kC, "{\"prompt\": 5}", "prompt"},
      {kC, "{\"prompt\": {\"a\": 1}}", "prompt"},
      {kC, "{\"prompt\": [1, \"a\"]}", "prompt"},
      {kC, "{\"prompt\": [1, -2]}", "prompt"},
      {kC, "{\"prompt\": [1, 2.5]}", "prompt"},
      {kC, "{\"prompt\": [1, 99999999999]}", "prompt"},
      {kC, "{\"prompt\": [\"a\", \"b\"]}", "prompt"},
      {kC, "{\"prompt\": \"a\", \"temperature\": -0.1}", "temperature"},
      {kC, "{\"prompt\": \"a\", \"temperature\": 2.5}", "temperature"},
      {kC, "{\"prompt\": \"a\", \"temperature\": \"hot\"}", "temperature"},
      {kC, "{\"prompt\": \"a\", \"temperature\": 1e300}", "temperature"},
      {kC, "{\"prompt\": \"a\", \"top_p\": 0}", "top_p"},
      {kC, "{\"prompt\": \"a\", \"top_p\": 1.5}", "top_p"},
      {kC, "{\"prompt\": \"a\", \"top_k\": -5}", "top_k"},
      {kC, "{\"prompt\": \"a\", \"top_k\": 1.5}", "top_k"},
      {kC, "{\"prompt\": \"a\", \"min_p\": 2}", "min_p"},
      {kC, "{\"prompt\": \"a\", \"repetition_penalty\": 0}", "repetition_penalty"},
      {kC, "{\"prompt\": \"a\", \"max_tokens\": 0}", "max_tokens"},
      {kC, "{\"prompt\": \"a\", \"max_tokens\": -1}", "max_tokens"},
      {kC, "{\"prompt\": \"a\", \"max_tokens\": 1e20}", "max_tokens"},
      {kC, "{\"prompt\": \"a\", \"max_tokens\": 99999999999999999999}", "max_tokens"},
      {kC, "{\"prompt\": \"a\", \"max_tokens\": \"10\"}", "max_tokens"},
      {kC, "{\"prompt\": \"a\", \"max_completion_tokens\": 0}", "max_completion_tokens"},
      {kC, "{\"prompt\": \"a\", \"n\": 0}", "n"},
      {kC, "{\"prompt\": \"a\", \"n\": 1000}", "n"},
      {kC, "{\"prompt\": \"a\", \"seed\": \"x\"}", "seed"},
      {kC, "{\"prompt\": \"a\", \"seed\": 1.5}", "seed"},
      {kC, "{\"prompt\": \"a\", \"stop\": 3}", "stop"},
      {kC, "{\"prompt\": \"a\", \"stop\": [\"a\", 3]}", "stop"},
      {kC,
       "{\"prompt\": \"a\", \"stop\": [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\","
       "\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]}",
       "stop"},
      {kC, "{\"prompt\": \"a\", \"stream\": \"yes\"}", "stream"},
      {kC, "{\"prompt\": \"a\", \"stream\": 1}", "stream"},
      {kC, "{\"prompt\": \"a\", \"stream_options\": {\"include_usage\": true}}", "stream_options"},
      {kC, "{\"prompt\": \"a\", \"stream\": true, \"stream_options\": 5}", "stream_options"},
      {kC, "{\"prompt\": \"a\", \"stream\": true, \"stream_options\": {\"include_usage\": 1}}",
       "stream_options.include_usage"},
      {kC, "{\"prompt\": \"a\", \"logprobs\": true}", "logprobs"},
      {kC, "{\"prompt\": \"a\", \"logprobs\": 21}", "logprobs"},
      {kC, "{\"prompt\": \"a\", \"cache_salt\": 7}", "cache_salt"},
      {kC, "{\"prompt\": \"a\", \"model\": 7}", "model"},
      {kC, "{\"prompt\": \"a\", \"echo\": true}", "echo"},
      {kC, "{\"prompt\": \"a\", \"best_of\": 2}", "best_of"},
      {kC, "{\"prompt\": \"a\", \"logit_bias\": {\"5\": 100}}", "logit_bias"},
      {kC, "{\"prompt\": \"a\", \"presence_penalty\": 0.5}", "presence_penalty"},
      {kC, "{\"prompt\": \"a\", \"frequency_penalty\": 3}", "frequency_penalty"},
      {kC, "{\"prompt\": \"a\", \"ignore_eos\": \"no\"}", "ignore_eos"},
      {kC, "{\"prompt\": \"a\", \"stop_token_ids\": [-1]}", "stop_token_ids"},
      {kChat, "{}", "messages"},
      {kChat, "{\"messages\": []}", "messages"},
      {kChat, "{\"messages\": \"hi\"}", "messages"},
      {kChat, "{\"messages\": [5]}", "messages[0]"},
      {kChat, "{\"messages\": [{\"content\": \"hi\"}]}", "messages[0].role"},
      {kChat, "{\"messages\": [{\"role\": \"wizard\", \"content\": \"hi\"}]}", "messages[0].role"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages[0].content"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
       "messages[0].content"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"logprobs\": 3}",
       "logprobs"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"top_logprobs\": 2}",
       "top_logprobs"},
      {kChat,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"logprobs\": true, "
       "\"top_logprobs\": 50}",
       "top_logprobs"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": [{}]}",
       "tools"},
      {kChat,
       "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"response_format\": "
       "{\"type\": \"json_object\"}}",
       "response_format"},
  };
  for (const BadCase& c : cases) {
    GenerationRequest r;
    std::optional<ApiError> err = ParseGenerationRequest(c.endpoint, c.body, ParseLimits(), &r);
    ASSERT_TRUE(err.has_value()) << c.body;
    EXPECT_EQ(err->http_status, 400) << c.body;
    EXPECT_EQ(err->param, c.param) << c.body << " -> " << err->message;
    EXPECT_FALSE(err->message.empty());
    const nlohmann::json j = err->ToJson();
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    if (c.param.empty()) {
      EXPECT_TRUE(j["error"]["param"].is_null());
    } else {
      EXPECT_EQ(j["error"]["param"], c.param);
    }
  }
}

TEST(RequestParseTest, UnsupportedFieldsSayWhyOnce) {
  // Each message names the field once and then the reason (not the same words twice).
  const std::pair<Endpoint, std::string> cases[] = {
      {kC, "{\"prompt\": \"a\", \"logit_bias\": {\"5\": 100}}"},
      {kC, "{\"prompt\": \"a\", \"presence_penalty\": 0.5}"},
      {kC, "{\"prompt\": \"a\", \"echo\": true}"},
      {kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": [{}]}"},
  };
  for (const auto& [endpoint, body] : cases) {
    GenerationRequest r;
    std::optional<ApiError> err = ParseGenerationRequest(endpoint, body, ParseLimits(), &r);
    ASSERT_TRUE(err.has_value()) << body;
    const std::string once = err->param + " is not supported";
    EXPECT_EQ(err->message.rfind(once + ": ", 0), 0u) << err->message;
    EXPECT_EQ(err->message.find(once, once.size()), std::string::npos) << err->message;
  }
  GenerationRequest r;
  std::optional<ApiError> err =
      ParseGenerationRequest(kC, "{\"prompt\": \"a\", \"logit_bias\": {\"5\": 100}}",
                             ParseLimits(), &r);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->message, "logit_bias is not supported: the sampler applies no per-token biases");
}

TEST(RequestParseTest, DeepNestingAndRandomMutationsNeverCrash) {
  // 200k nested arrays: the parser and the destructor must not recurse that deep.
  const int depth = 200000;
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  GenerationRequest r;
  std::optional<ApiError> err =
      ParseGenerationRequest(kC, "{\"prompt\": " + nested + "}", ParseLimits(), &r);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "prompt");
  // Random byte mutations of a valid body: each parses or is a 400, nothing else.
  const std::string valid =
      "{\"prompt\": [1, 2, 3], \"max_tokens\": 5, \"temperature\": 0.5, \"stop\": [\"a\"], "
      "\"n\": 2, \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
      "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) {
    std::string body = valid;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) body[rng() % body.size()] = char(rng() % 256);
    for (Endpoint ep : {kC, kChat}) {
      GenerationRequest out;
      std::optional<ApiError> res = ParseGenerationRequest(ep, body, ParseLimits(), &out);
      if (res) {
        EXPECT_EQ(res->http_status, 400);
      }
    }
  }
}

TEST(RequestParseTest, GoodCompletionFields) {
  GenerationRequest r;
  const std::string body =
      "{\"model\": \"m\", \"prompt\": \"Hello\", \"max_tokens\": 7, \"temperature\": 0, "
      "\"top_p\": 0.5, \"top_k\": 3, \"min_p\": 0.1, \"seed\": -3, \"n\": 2, \"stop\": \"\\n\", "
      "\"stream\": true, \"stream_options\": {\"include_usage\": true}, \"logprobs\": 2, "
      "\"cache_salt\": \"tenant\", \"user\": \"u\", \"unknown_field\": [1, 2], "
      "\"presence_penalty\": 0, \"echo\": false, \"temperature_unused\": null}";
  ASSERT_FALSE(ParseGenerationRequest(kC, body, ParseLimits(), &r).has_value());
  EXPECT_EQ(r.prompt_text, "Hello");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.cache_salt, "tenant");
}

TEST(RequestParseTest, DefaultsAndNulls) {
  GenerationRequest r;
  ASSERT_FALSE(ParseGenerationRequest(
                   kC, "{\"prompt\": [[1, 2, 3]], \"max_tokens\": null, \"temperature\": null}",
                   ParseLimits(), &r)
                   .has_value());
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.min_p, 0.0f);
  EXPECT_FALSE(r.logprobs);
  EXPECT_FALSE(r.stream);
}

TEST(RequestParseTest, ChatMessages) {
  GenerationRequest r;
  const std::string body =
      "{\"messages\": [{\"role\": \"developer\", \"content\": \"Be brief.\"}, "
      "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi \"}, "
      "{\"type\": \"text\", \"text\": \"there\"}]}, {\"role\": \"assistant\", \"content\": null}],"
      " \"logprobs\": true, \"top_logprobs\": 3, \"max_completion_tokens\": 5}";
  ASSERT_FALSE(ParseGenerationRequest(kChat, body, ParseLimits(), &r).has_value());
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, ChatRole::kSystem);
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].role, ChatRole::kAssistant);
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.max_tokens, 5);
}

TEST(RequestParseTest, ReturnTokenIds) {
  GenerationRequest r;
  ASSERT_FALSE(ParseGenerationRequest(kC, "{\"prompt\": [5, 6]}", ParseLimits(), &r));
  EXPECT_FALSE(r.return_token_ids);
  ASSERT_FALSE(ParseGenerationRequest(kC, "{\"prompt\": [5, 6], \"return_token_ids\": true}",
                                      ParseLimits(), &r));
  EXPECT_TRUE(r.return_token_ids);
  GenerationRequest bad;
  std::optional<ApiError> err =
      ParseGenerationRequest(kC, "{\"prompt\": [5], \"return_token_ids\": 1}", ParseLimits(), &bad);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->http_status, 400);
  EXPECT_EQ(err->param, "return_token_ids");
}

// --- BuildRequest: the model-dependent checks. ---

std::optional<ApiError> Build(Endpoint e, const std::string& body, int64_t ctx, BuiltRequest* out) {
  GenerationRequest r;
  if (auto err = ParseGenerationRequest(e, body, ParseLimits(), &r)) return err;
  return BuildRequest(r, testing::TinyTokenizer(), ChatTemplate(), ModelLimits{ctx}, out);
}

TEST(PromptBuildTest, ContextAndVocabularyChecks) {
  const Tokenizer& t = testing::TinyTokenizer();
  BuiltRequest b;
  // Exactly the context: no room for output.
  std::string ids = "[1";
  for (int i = 1; i < 32; ++i) ids += ",300";
  ids += "]";
  std::optional<ApiError> err = Build(kC, "{\"prompt\": " + ids + "}", 32, &b);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "prompt");
  EXPECT_EQ(err->code, "context_length_exceeded");
  // One less leaves room for one token; the default max_tokens (16) is clamped to it.
  err = Build(kC, "{\"prompt\": " + ids + "}", 33, &b);
  ASSERT_FALSE(err.has_value()) << err->message;
  EXPECT_EQ(b.params.max_tokens, 1);
  // An explicit max_tokens beyond the context is an error naming max_tokens.
  err = Build(kC, "{\"prompt\": " + ids + ", \"max_tokens\": 2}", 33, &b);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "max_tokens");
  // Token ids outside the vocabulary.
  err = Build(kC, "{\"prompt\": [1, " + std::to_string(t.vocab_size()) + "]}", 64, &b);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "prompt");
  err = Build(kC, "{\"prompt\": []}", 64, &b);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "prompt");
  err = Build(kC, "{\"prompt\": \"a\", \"stop_token_ids\": [100000]}", 64, &b);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "stop_token_ids");
}

TEST(PromptBuildTest, FillsEngineParams) {
  BuiltRequest b;
  ASSERT_FALSE(Build(kC,
                     "{\"prompt\": \"hello world\", \"max_tokens\": 4, \"n\": 3, \"seed\": 9, "
                     "\"stop\": [\"x\"], \"logprobs\": 0, \"cache_salt\": \"s\"}",
                     128, &b)
                   .has_value());
  EXPECT_EQ(b.params.prompt, testing::TinyTokenizer().Encode("hello world", true));
  EXPECT_EQ(b.params.prompt.front(), testing::TinyTokenizer().bos());
  EXPECT_EQ(b.params.max_tokens, 4);
  EXPECT_EQ(b.params.n, 3);
  EXPECT_EQ(b.params.sampling.seed, 9u);
  EXPECT_EQ(b.params.logprobs, 1);  // The sampled token's logprob needs one.
  EXPECT_EQ(b.params.cache_salt, "s");
  EXPECT_EQ(b.stop, std::vector<std::string>{"x"});
  // Chat: default max_tokens is the rest of the context; the plain template's implicit stop.
  ASSERT_FALSE(Build(kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 128, &b)
                   .has_value());
  EXPECT_EQ(b.params.max_tokens, 128 - int64_t(b.params.prompt.size()));
  EXPECT_EQ(b.stop, std::vector<std::string>{"\nUser:"});
}

TEST(PromptBuildTest, SpecialTokenId) {
  const Tokenizer& t = testing::TinyTokenizer();
  EXPECT_EQ(SpecialTokenId(t, "</s>"), t.eos());
  EXPECT_EQ(SpecialTokenId(t, "<|im_end|>"), kNoToken);  // Not in this vocabulary.
  EXPECT_EQ(SpecialTokenId(t, ""), kNoToken);
}

}  // namespace
}  // namespace kvengine::server
