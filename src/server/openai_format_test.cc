#include "server/openai_format.h"

#include <gtest/gtest.h>

#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

using nlohmann::json;

ResponseMeta Meta(Endpoint e, bool logprobs = false) {
  ResponseMeta m = NewResponseMeta(e, "tiny", logprobs);
  m.created = 1700000000;
  return m;
}

LogprobEntry Entry(const std::string& text, float lp, int64_t offset) {
  LogprobEntry e;
  e.token = {text, std::vector<uint8_t>(text.begin(), text.end())};
  e.logprob = lp;
  e.text_offset = offset;
  e.top = {{{text, {}}, lp}, {{"x", {'x'}}, -5.0f}};
  return e;
}

TEST(OpenAiFormatTest, IdsAndUsage) {
  EXPECT_EQ(NewResponseMeta(Endpoint::kChat, "m", false).id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(NewResponseMeta(Endpoint::kCompletions, "m", false).id.rfind("cmpl-", 0), 0u);
  EXPECT_NE(NewResponseMeta(Endpoint::kChat, "m", false).id,
            NewResponseMeta(Endpoint::kChat, "m", false).id);
  const json u = UsageJson({10, 5, 8});
  EXPECT_EQ(u, json::parse(R"({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                               "prompt_tokens_details": {"cached_tokens": 8}})"));
}

TEST(OpenAiFormatTest, CompletionResponse) {
  ChoiceDelta c;
  c.index = 0;
  c.text = "hi";
  c.finish_reason = "length";
  const json j = ResponseJson(Meta(Endpoint::kCompletions), {c}, {3, 1, 0});
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["choices"][0]["text"], "hi");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["total_tokens"], 4);
}

TEST(OpenAiFormatTest, ChatResponseWithLogprobs) {
  ChoiceDelta c;
  c.index = 1;
  c.text = "ok";
  c.finish_reason = "stop";
  c.logprobs = {Entry("o", -0.25f, 0), Entry("k", -0.5f, 1)};
  const json j = ResponseJson(Meta(Endpoint::kChat, true), {c}, {3, 2, 0});
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["index"], 1);
  EXPECT_EQ(j["choices"][0]["message"], json::parse(R"({"role": "assistant", "content": "ok"})"));
  const json& lp = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "o");
  EXPECT_EQ(lp[0]["logprob"], -0.25);
  EXPECT_EQ(lp[0]["bytes"], json::array({111}));
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(lp[0]["top_logprobs"][1]["token"], "x");
}

TEST(OpenAiFormatTest, CompletionLogprobs) {
  const json j = LogprobsJson(Endpoint::kCompletions, {Entry("a", -1.0f, 0), Entry("b", -2.0f, 1)});
  EXPECT_EQ(j["tokens"], json::array({"a", "b"}));
  EXPECT_EQ(j["token_logprobs"], json::array({-1.0, -2.0}));
  EXPECT_EQ(j["text_offset"], json::array({0, 1}));
  EXPECT_EQ(j["top_logprobs"][0], json::parse(R"({"a": -1.0, "x": -5.0})"));
}

TEST(OpenAiFormatTest, SseChunks) {
  ChoiceDelta d;
  d.index = 0;
  d.text = "He";
  const ResponseMeta chat = Meta(Endpoint::kChat);
  std::string sse = SseEvent(ChunkJson(chat, d, /*first=*/true, /*include_usage=*/true));
  ASSERT_EQ(sse.rfind("data: ", 0), 0u);
  ASSERT_EQ(sse.substr(sse.size() - 2), "\n\n");
  EXPECT_EQ(sse.find('\n'), sse.size() - 2);  // One line: JSON never spans lines.
  json j = json::parse(sse.substr(6));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"], json::parse(R"({"role": "assistant", "content": "He"})"));
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(j.contains("usage") && j["usage"].is_null());
  // A later chunk: no role; the final one carries the finish reason and may have no text.
  d.text = "";
  d.finish_reason = "stop";
  j = ChunkJson(chat, d, /*first=*/false, /*include_usage=*/false);
  EXPECT_EQ(j["choices"][0]["delta"], json::object());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(j.contains("usage"));
  // Completions chunks.
  d.text = "x\ny";
  j = ChunkJson(Meta(Endpoint::kCompletions), d, true, false);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "x\ny");
  sse = SseEvent(j);
  EXPECT_EQ(sse.find('\n'), sse.size() - 2);  // The newline is escaped inside the JSON.
  // The usage chunk.
  j = UsageChunkJson(chat, {4, 2, 0});
  EXPECT_EQ(j["choices"], json::array());
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(OpenAiFormatTest, ErrorJsonInAndOutOfStreams) {
  ApiError e = BadRequest("top_p", "top_p must be in (0, 1], got 2");
  EXPECT_EQ(e.ToJson(), json::parse(R"({"error": {"message": "top_p must be in (0, 1], got 2",
      "type": "invalid_request_error", "param": "top_p", "code": null}})"));
  EXPECT_EQ(SseEvent(e.ToJson()).rfind("data: {\"error\":", 0), 0u);
  EXPECT_EQ(FromEngineStatus(Unavailable("queue full")).http_status, 503);
  EXPECT_EQ(FromEngineStatus(Unavailable("queue full")).retry_after_s, 1);
  EXPECT_EQ(FromEngineStatus(OutOfRange("needs 9 GiB")).http_status, 400);
  EXPECT_EQ(FromEngineStatus(InvalidArgument("bad")).http_status, 400);
  EXPECT_EQ(FromEngineStatus(Internal("bug")).http_status, 500);
  // Invalid UTF-8 never makes DumpJson throw.
  EXPECT_FALSE(DumpJson(json("\xff")).empty());
}

TEST(OpenAiFormatTest, ReturnTokenIds) {
  ChoiceDelta c;
  c.text = "ab";
  c.token_ids = {300, 301};
  c.finish_reason = "length";
  ResponseMeta meta = Meta(Endpoint::kCompletions);
  meta.token_ids = true;
  meta.prompt_token_ids = {1, 7, 8};
  json j = ResponseJson(meta, {c}, {3, 2, 0});
  EXPECT_EQ(j["choices"][0]["token_ids"], json::array({300, 301}));
  EXPECT_EQ(j["choices"][0]["prompt_token_ids"], json::array({1, 7, 8}));
  EXPECT_FALSE(j.contains("prompt_token_ids"));
  // Streamed: the prompt's ids in a choice's first chunk only; each chunk its own tokens.
  j = ChunkJson(meta, c, /*first=*/true, /*include_usage=*/false);
  EXPECT_EQ(j["choices"][0]["prompt_token_ids"], json::array({1, 7, 8}));
  EXPECT_EQ(j["choices"][0]["token_ids"], json::array({300, 301}));
  c.token_ids = {302};
  j = ChunkJson(meta, c, /*first=*/false, /*include_usage=*/false);
  EXPECT_FALSE(j["choices"][0].contains("prompt_token_ids"));
  EXPECT_EQ(j["choices"][0]["token_ids"], json::array({302}));
  // Chat: the prompt's ids on the object.
  meta.endpoint = Endpoint::kChat;
  j = ResponseJson(meta, {c}, {3, 1, 0});
  EXPECT_EQ(j["prompt_token_ids"], json::array({1, 7, 8}));
  EXPECT_EQ(j["choices"][0]["token_ids"], json::array({302}));
  // Without the option: no id arrays at all.
  j = ResponseJson(Meta(Endpoint::kCompletions), {c}, {3, 1, 0});
  EXPECT_FALSE(j["choices"][0].contains("token_ids"));
  EXPECT_FALSE(j["choices"][0].contains("prompt_token_ids"));
}

TEST(OpenAiFormatTest, GenerationDeltasCarryEveryTokenId) {
  // A lone byte token (the first byte of a 2-byte UTF-8 character, 0xC3 = id 3 + 0xC3) has no
  // text yet, but with return_token_ids it still makes a delta, so each token reaches a chunk.
  const int32_t lead_byte = 3 + 0xC3, trail_byte = 3 + 0xA9;  // "é"
  Generation g(testing::TinyTokenizer(), 1, {}, -1, 4, /*return_token_ids=*/true);
  RequestEvent e;
  e.has_token = true;
  e.token = lead_byte;
  g.Apply(e);
  std::vector<ChoiceDelta> d = g.TakeDeltas();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "");
  EXPECT_EQ(d[0].token_ids, std::vector<int32_t>{lead_byte});
  e.token = trail_byte;
  g.Apply(e);
  d = g.TakeDeltas();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "\xc3\xa9");
  EXPECT_EQ(d[0].token_ids, std::vector<int32_t>{trail_byte});
  // Accumulated for a non-streamed answer.
  ChoiceDelta acc, part;
  part.token_ids = {1, 2};
  AppendDelta(part, &acc);
  part.token_ids = {3};
  AppendDelta(part, &acc);
  EXPECT_EQ(acc.token_ids, (std::vector<int32_t>{1, 2, 3}));
  // Without the option a held-back token makes no delta.
  Generation plain(testing::TinyTokenizer(), 1, {}, -1, 4);
  e.token = lead_byte;
  plain.Apply(e);
  EXPECT_TRUE(plain.TakeDeltas().empty());
}

}  // namespace
}  // namespace kvengine::server
