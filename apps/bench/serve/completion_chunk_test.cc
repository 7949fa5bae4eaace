#include "bench/serve/completion_chunk.h"

#include <gtest/gtest.h>

namespace kvengine::loadgen {
namespace {

using Kind = CompletionChunk::Kind;

TEST(CompletionChunkTest, TokensFromIdsOrText) {
  CompletionChunk c = ParseCompletionChunk(
      R"({"choices": [{"index": 0, "text": "", "token_ids": [5, 6], "finish_reason": null}],
          "usage": null})");
  EXPECT_EQ(c.kind, Kind::kData);
  EXPECT_EQ(c.tokens, 2);  // Ids count even when the text is held back.
  EXPECT_EQ(c.token_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_FALSE(c.usage.has_value());
  // A server without token ids: a chunk with text is one token, an empty one none.
  c = ParseCompletionChunk(R"({"choices": [{"text": "hi"}]})");
  EXPECT_EQ(c.tokens, 1);
  EXPECT_TRUE(c.token_ids.empty());
  EXPECT_EQ(
      ParseCompletionChunk(R"({"choices": [{"text": "", "finish_reason": "length"}]})").tokens, 0);
}

TEST(CompletionChunkTest, UsageDoneAndErrors) {
  CompletionChunk c = ParseCompletionChunk(
      R"({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4,
          "total_tokens": 13, "prompt_tokens_details": {"cached_tokens": 8}}})");
  ASSERT_TRUE(c.usage.has_value());
  EXPECT_EQ(c.usage->prompt_tokens, 9);
  EXPECT_EQ(c.usage->completion_tokens, 4);
  EXPECT_EQ(c.usage->cached_tokens, 8);
  c = ParseCompletionChunk(R"({"choices": [], "usage": {"completion_tokens": 4}})");
  EXPECT_EQ(c.usage->cached_tokens, -1);  // Not reported.
  EXPECT_EQ(ParseCompletionChunk("[DONE]").kind, Kind::kDone);
  c = ParseCompletionChunk(R"({"error": {"message": "the server is shutting down",
                                "type": "service_unavailable"}})");
  EXPECT_EQ(c.kind, Kind::kError);
  EXPECT_EQ(c.error, "the server is shutting down");
}

TEST(CompletionChunkTest, HostilePayloadsAreErrorsNotCrashes) {
  for (const char* bad :
       {"", "{", "[1, 2]", "null", "\"text\"", R"({"choices": 5})", R"({"choices": [7]})",
        R"({"choices": [{"token_ids": [1, -2]}]})",
        R"({"choices": [{"token_ids": [1, 4294967296]}]})",
        R"({"choices": [{"token_ids": [1.5]}]})", R"({"choices": [{"token_ids": "1"}]})",
        R"({"choices": [{"text": 3}]})", "\xff\xfe"}) {
    EXPECT_EQ(ParseCompletionChunk(bad).kind, Kind::kError) << bad;
  }
  // Odd but harmless: a usage with wrong types reads as "not reported".
  const CompletionChunk c =
      ParseCompletionChunk(R"({"choices": [], "usage": {"completion_tokens": "4"}})");
  EXPECT_EQ(c.kind, Kind::kData);
  EXPECT_EQ(c.usage->completion_tokens, -1);
}

}  // namespace
}  // namespace kvengine::loadgen
