// The text the demo workload is made of (demo_workload.h): a system prompt, user questions, chat
// messages and a long document, all original prose. The demo tokenizes it with the model's own
// tokenizer and cuts or repeats it to exact token counts, so a request has the same length on
// every model whatever its vocabulary.
//
// Pure data; any thread.
#pragma once

#include <span>
#include <string_view>

namespace kvengine::demo {

// Paragraphs of an assistant's system prompt (a bicycle shop's support desk).
std::span<const std::string_view> SystemPromptParagraphs();
// Short questions different users ask that assistant.
std::span<const std::string_view> UserQuestions();
// Paragraphs of a long document (a town's annual water-supply report).
std::span<const std::string_view> DocumentParagraphs();
// Questions about that document.
std::span<const std::string_view> DocumentQuestions();
// One user's messages in a multi-turn chat (planning a cycling trip), in order.
std::span<const std::string_view> ChatMessages();

}  // namespace kvengine::demo
