// The mixed workload `kvengine demo` replays through the engine: three scenarios that together
// show what a paged KV cache with prefix caching does with memory.
//
//   shared system prompt   one system prompt of system_prompt_tokens, then `users` users each
//                          asking one question (question_tokens). User 0 arrives first; the
//                          others arrive once user 0 has its first token, i.e. once the system
//                          prompt's blocks are in the prefix cache.
//   multi-turn chat        one conversation of chat_turns turns. Turn k's prompt is turn k-1's
//                          prompt + the tokens turn k-1 actually generated + a new user message
//                          (chat_message_tokens); it is submitted when turn k-1 finishes.
//   long document          one document of document_tokens followed by document_questions
//                          questions, each a separate request whose prompt is document +
//                          question. Question 0 arrives with the users of the first scenario
//                          (after them), the others once it has its first token (the document
//                          is cached).
//
// Every request generates exactly max_tokens tokens (greedy, ignore_eos), so a prompt's length is
// known before the run and two runs (f16 and int8 KV) do the same work. Prompts are real text
// (demo_text.h) tokenized by the model's own tokenizer and cut or repeated to the exact token
// counts above, so the shape is the same on every model.
//
// Pure functions and values; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::demo {

enum class Scenario : uint8_t { kSharedSystemPrompt, kMultiTurnChat, kLongDocument };

inline constexpr Scenario kAllScenarios[] = {Scenario::kSharedSystemPrompt,
                                             Scenario::kMultiTurnChat, Scenario::kLongDocument};

// "shared system prompt", "multi-turn chat", "long document".
std::string_view ScenarioName(Scenario scenario);
// "shared_system_prompt", "multi_turn_chat", "long_document" (JSON keys).
std::string_view ScenarioKey(Scenario scenario);

// When a request is submitted.
enum class Arrival : uint8_t {
  kAtStart,          // With the first requests.
  kAfterFirstToken,  // Once request `after` has its first token (its prompt is cached).
  kAfterFinish,      // Once request `after` has finished (the next turn of a chat).
};

struct WorkloadOptions {
  int system_prompt_tokens = 384;  // Shared by every user of the first scenario.
  int users = 12;                  // Users asking one question each under that system prompt.
  int question_tokens = 24;        // Each user's question, and each question on the document.
  int chat_turns = 4;
  int chat_message_tokens = 48;  // Each new user message of the chat.
  int document_tokens = 1536;
  int document_questions = 4;
  int max_tokens = 32;  // Tokens every request generates, exactly.

  // Every count and length multiplied by `factor` (> 0), rounded, at least 1.
  WorkloadOptions Scaled(double factor) const;
  // Only the lengths multiplied (the counts stay): for fitting a short context.
  WorkloadOptions LengthsScaled(double factor) const;
  // The longest request (prompt + max_tokens) these options give.
  int64_t LongestRequest() const;
  Status Validate() const;
};

// The largest shrink of `options`' lengths (LengthsScaled, factor <= 1) whose longest request
// fits max_model_len; `options` unchanged when it already fits. OutOfRange when even the
// shortest lengths do not fit.
Result<WorkloadOptions> FitToContext(const WorkloadOptions& options, int64_t max_model_len);

struct DemoRequest {
  Scenario scenario = Scenario::kSharedSystemPrompt;
  int index = 0;  // Within its scenario: the user, the turn or the question.
  // The prompt: when history >= 0, request `history`'s prompt + the tokens it generated, then
  // `tokens`; otherwise `tokens` alone (BOS included when the tokenizer adds one).
  int history = -1;
  std::vector<int32_t> tokens;
  Arrival arrival = Arrival::kAtStart;
  int after = -1;  // The request the arrival waits for; -1 with kAtStart.
  int64_t max_tokens = 0;
  int64_t prompt_tokens = 0;  // Known up front: every request generates exactly max_tokens.
};

struct Workload {
  WorkloadOptions options;
  // In scenario order. `history` and `after` always point to earlier requests.
  std::vector<DemoRequest> requests;

  int64_t TotalPromptTokens() const;
  int64_t TotalOutputTokens() const;
  int64_t LongestRequest() const;  // Prompt + max_tokens.
  int CountOf(Scenario scenario) const;
  // The prompt of request `i` given the prompts of the requests before it and the tokens they
  // generated ([request] -> ids; entries after i are not read).
  std::vector<int32_t> Prompt(size_t i, std::span<const std::vector<int32_t>> prompts,
                              std::span<const std::vector<int32_t>> outputs) const;
};

// Exactly `n` tokens: `header` then texts[first], texts[first + 1], ... (cycling) encoded with
// `tokenizer` and cut at n; with `bos`, the tokenizer's BOS first when it adds one.
std::vector<int32_t> TokensOfLength(const Tokenizer& tokenizer, std::string_view header,
                                    std::span<const std::string_view> texts, size_t first, int n,
                                    bool bos);

Result<Workload> BuildWorkload(const Tokenizer& tokenizer, const WorkloadOptions& options);

}  // namespace kvengine::demo
