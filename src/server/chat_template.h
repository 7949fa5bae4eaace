// ChatTemplate: turns chat messages into prompt text, for the template families models ship in
// their GGUF `tokenizer.chat_template`. The Jinja source is never executed: it is only searched
// for signature substrings that identify its family, and a built-in renderer writes that
// family's format (the approach llama.cpp's llm_chat_detect_template takes).
//
// Families, checked in this order (the first signature found wins), and what each writes:
//   kLlama3   signature "<|start_header_id|>"
//             <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
//   kChatml   signature "<|im_start|>"
//             <|im_start|>{role}\n{content}<|im_end|>\n
//   kGemma    signature "<start_of_turn>"
//             <start_of_turn>{user|model}\n{content}<end_of_turn>\n
//             (no system role: the system text opens the first user turn)
//   kLlama2   signatures "[INST]" and "<<SYS>>"
//             [INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] ...
//   kMistral  signature "[INST]"
//             [INST] {user} [/INST] {assistant}</s>[INST] ...
//             (the system text opens the first user turn)
//   kPhi3     signatures "<|user|>" and "<|end|>"
//             <|{role}|>\n{content}<|end|>\n
//   kZephyr   signature "<|user|>"
//             <|{role}|>\n{content}</s>\n
//   kPlain    no template, or one not recognized: the documented fallback
//             System: {content}\nUser: {content}\nAssistant: {content}\n ... Assistant:
//             with "\nUser:" as an implicit stop string so a base model does not write the
//             user's next turn.
// Every rendering ends with the assistant's turn opener (add_generation_prompt). The BOS token
// is never written: the tokenizer adds it (Encode(add_special=true)) as the model's metadata says.
// RenderSegments keeps the template's markup apart from the messages' content: the server
// tokenizes markup with special-token parsing, so the markers become their special tokens, and
// content without, so a user who types "<|im_end|>" or "</s>" gets that text, never the token
// (TokenizeChat, prompt_build.h; as vLLM and llama.cpp's server do).
//
// A value type; immutable after construction; any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>


namespace kvengine::server {

enum class ChatRole { kSystem, kUser, kAssistant };

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
};

// A piece of a rendering: the template's own markup, or (content) text from a message.
struct ChatSegment {
  std::string text;
  bool content = false;
};

enum class ChatTemplateFamily {
  kPlain,
  kChatml,
  kLlama2,
  kLlama3,
  kMistral,
  kZephyr,
  kPhi3,
  kGemma
};

class ChatTemplate {
 public:
  ChatTemplate() = default;  // kPlain.
  explicit ChatTemplate(ChatTemplateFamily family) : family_(family) {}

  // Recognizes the family of a template's source text (a GGUF's "tokenizer.chat_template");
  // empty or unknown text gives kPlain.
  static ChatTemplate Detect(std::string_view template_source);

  ChatTemplateFamily family() const { return family_; }
  // "llama3", "chatml", "gemma", "llama2", "mistral", "phi3", "zephyr", "plain".
  std::string_view name() const;

  // The prompt text for `messages`, ending with the assistant's turn opener.
  std::string Render(std::span<const ChatMessage> messages) const;
  // The same text in pieces, markup apart from content; neighbours are never of the same kind.
  std::vector<ChatSegment> RenderSegments(std::span<const ChatMessage> messages) const;
  // The marker that ends an assistant turn ("<|im_end|>", "<|eot_id|>", ...); empty where the
  // model's EOS ends it. The server stops on its token id when it is one special token.
  std::string_view end_of_turn() const;
  // Stop strings the family needs besides the model's end-of-generation tokens.
  std::vector<std::string> implicit_stops() const;

 private:
  ChatTemplateFamily family_ = ChatTemplateFamily::kPlain;
};

}  // namespace kvengine::server
