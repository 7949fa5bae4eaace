#include "server/chat_template.h"

namespace kvengine::server {
namespace {

bool Has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

std::string_view RoleName(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem:
      return "system";
    case ChatRole::kUser:
      return "user";
    case ChatRole::kAssistant:
      return "assistant";
  }
  return "user";
}

// Builds a rendering: appends markup and content, merging neighbours of the same kind.
class ChatSegmentWriter {
 public:
  ChatSegmentWriter& Markup(std::string_view text) { return Add(text, false); }
  ChatSegmentWriter& Content(std::string_view text) { return Add(text, true); }
  std::vector<ChatSegment> Take() { return std::move(out_); }

 private:
  ChatSegmentWriter& Add(std::string_view text, bool content) {
    if (text.empty()) return *this;
    if (!out_.empty() && out_.back().content == content) {
      out_.back().text += text;
    } else {
      out_.push_back(ChatSegment{std::string(text), content});
    }
    return *this;
  }
  std::vector<ChatSegment> out_;
};

// Families without a system role: the system messages' text opens the first user turn
// (separated by a blank line), as those models' own templates do.
std::vector<ChatMessage> FoldSystemIntoFirstUser(std::span<const ChatMessage> messages) {
  std::string system;
  std::vector<ChatMessage> out;
  for (const ChatMessage& m : messages) {
    if (m.role == ChatRole::kSystem) {
      system += (system.empty() ? "" : "\n\n") + m.content;
    } else {
      out.push_back(m);
    }
  }
  if (system.empty()) return out;
  for (ChatMessage& m : out) {
    if (m.role == ChatRole::kUser) {
      m.content = system + "\n\n" + m.content;
      return out;
    }
  }
  // Only a system message: it becomes the user turn.
  out.insert(out.begin(), ChatMessage{ChatRole::kUser, system});
  return out;
}

std::vector<ChatSegment> RenderLlama2(std::span<const ChatMessage> messages) {
  ChatSegmentWriter out;
  std::string system;
  bool open_inst = false;  // "[INST]" written, "[/INST]" pending.
  for (const ChatMessage& m : messages) {
    switch (m.role) {
      case ChatRole::kSystem:
        system += (system.empty() ? "" : "\n") + m.content;
        break;
      case ChatRole::kUser:
        if (open_inst) {  // Consecutive user messages share one [INST] block.
          out.Markup("\n");
        } else {
          out.Markup("[INST] ");
          if (!system.empty()) {
            out.Markup("<<SYS>>\n").Content(system).Markup("\n<</SYS>>\n\n");
            system.clear();
          }
        }
        out.Content(Trim(m.content));
        open_inst = true;
        break;
      case ChatRole::kAssistant:
        out.Markup(open_inst ? " [/INST] " : "[INST] [/INST] ");
        out.Content(Trim(m.content)).Markup(" </s><s>");
        open_inst = false;
        break;
    }
  }
  if (open_inst) {
    out.Markup(" [/INST]");
  } else if (!system.empty()) {
    out.Markup("[INST] <<SYS>>\n").Content(system).Markup("\n<</SYS>>\n\n [/INST]");
  }
  return out.Take();
}

std::vector<ChatSegment> RenderMistral(std::span<const ChatMessage> messages) {
  ChatSegmentWriter out;
  for (const ChatMessage& m : FoldSystemIntoFirstUser(messages)) {
    if (m.role == ChatRole::kUser) {
      out.Markup("[INST] ").Content(m.content).Markup(" [/INST]");
    } else {
      out.Markup(" ").Content(m.content).Markup("</s>");
    }
  }
  return out.Take();
}

std::vector<ChatSegment> RenderGemma(std::span<const ChatMessage> messages) {
  ChatSegmentWriter out;
  for (const ChatMessage& m : FoldSystemIntoFirstUser(messages)) {
    out.Markup("<start_of_turn>");
    out.Markup(m.role == ChatRole::kAssistant ? "model" : "user");
    out.Markup("\n").Content(Trim(m.content)).Markup("<end_of_turn>\n");
  }
  out.Markup("<start_of_turn>model\n");
  return out.Take();
}

std::vector<ChatSegment> RenderPlain(std::span<const ChatMessage> messages) {
  ChatSegmentWriter out;
  for (const ChatMessage& m : messages) {
    switch (m.role) {
      case ChatRole::kSystem:
        out.Markup("System: ");
        break;
      case ChatRole::kUser:
        out.Markup("User: ");
        break;
      case ChatRole::kAssistant:
        out.Markup("Assistant: ");
        break;
    }
    out.Content(m.content).Markup("\n");
  }
  out.Markup("Assistant:");
  return out.Take();
}

// Llama-3, ChatML, Phi-3 and Zephyr: a header with the role, the content, an end marker.
std::vector<ChatSegment> RenderHeaded(ChatTemplateFamily family,
                                      std::span<const ChatMessage> messages) {
  ChatSegmentWriter out;
  for (const ChatMessage& m : messages) {
    switch (family) {
      case ChatTemplateFamily::kLlama3:
        out.Markup("<|start_header_id|>").Markup(RoleName(m.role));
        out.Markup("<|end_header_id|>\n\n").Content(Trim(m.content)).Markup("<|eot_id|>");
        break;
      case ChatTemplateFamily::kChatml:
        out.Markup("<|im_start|>").Markup(RoleName(m.role)).Markup("\n");
        out.Content(m.content).Markup("<|im_end|>\n");
        break;
      default:  // kPhi3, kZephyr.
        out.Markup("<|").Markup(RoleName(m.role)).Markup("|>\n").Content(m.content);
        out.Markup(family == ChatTemplateFamily::kPhi3 ? "<|end|>" : "</s>").Markup("\n");
        break;
    }
  }
  switch (family) {
    case ChatTemplateFamily::kLlama3:
      out.Markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    case ChatTemplateFamily::kChatml:
      out.Markup("<|im_start|>assistant\n");
      break;
    default:
      out.Markup("<|assistant|>\n");
      break;
  }
  return out.Take();
}

}  // namespace

ChatTemplate ChatTemplate::Detect(std::string_view src) {
  if (Has(src, "<|start_header_id|>")) return ChatTemplate(ChatTemplateFamily::kLlama3);
  if (Has(src, "<|im_start|>")) return ChatTemplate(ChatTemplateFamily::kChatml);
  if (Has(src, "<start_of_turn>")) return ChatTemplate(ChatTemplateFamily::kGemma);
  if (Has(src, "[INST]")) {
    return ChatTemplate(Has(src, "<<SYS>>") ? ChatTemplateFamily::kLlama2
                                            : ChatTemplateFamily::kMistral);
  }
  if (Has(src, "<|user|>")) {
    return ChatTemplate(Has(src, "<|end|>") ? ChatTemplateFamily::kPhi3
                                            : ChatTemplateFamily::kZephyr);
  }
  return ChatTemplate(ChatTemplateFamily::kPlain);
}

std::string_view ChatTemplate::name() const {
  switch (family_) {
    case ChatTemplateFamily::kPlain:
      return "plain";
    case ChatTemplateFamily::kChatml:
      return "chatml";
    case ChatTemplateFamily::kLlama2:
      return "llama2";
    case ChatTemplateFamily::kLlama3:
      return "llama3";
    case ChatTemplateFamily::kMistral:
      return "mistral";
    case ChatTemplateFamily::kZephyr:
      return "zephyr";
    case ChatTemplateFamily::kPhi3:
      return "phi3";
    case ChatTemplateFamily::kGemma:
      return "gemma";
  }
  return "plain";
}

std::vector<ChatSegment> ChatTemplate::RenderSegments(std::span<const ChatMessage> messages) const {
  switch (family_) {
    case ChatTemplateFamily::kLlama3:
    case ChatTemplateFamily::kChatml:
    case ChatTemplateFamily::kPhi3:
    case ChatTemplateFamily::kZephyr:
      return RenderHeaded(family_, messages);
    case ChatTemplateFamily::kGemma:
      return RenderGemma(messages);
    case ChatTemplateFamily::kLlama2:
      return RenderLlama2(messages);
    case ChatTemplateFamily::kMistral:
      return RenderMistral(messages);
    case ChatTemplateFamily::kPlain:
      return RenderPlain(messages);
  }
  return RenderPlain(messages);
}

std::string ChatTemplate::Render(std::span<const ChatMessage> messages) const {
  std::string out;
  for (const ChatSegment& seg : RenderSegments(messages)) out += seg.text;
  return out;
}

std::string_view ChatTemplate::end_of_turn() const {
  switch (family_) {
    case ChatTemplateFamily::kLlama3:
      return "<|eot_id|>";
    case ChatTemplateFamily::kChatml:
      return "<|im_end|>";
    case ChatTemplateFamily::kGemma:
      return "<end_of_turn>";
    case ChatTemplateFamily::kPhi3:
      return "<|end|>";
    case ChatTemplateFamily::kZephyr:
    case ChatTemplateFamily::kLlama2:
    case ChatTemplateFamily::kMistral:
    case ChatTemplateFamily::kPlain:
      return {};
  }
  return {};
}

std::vector<std::string> ChatTemplate::implicit_stops() const {
  switch (family_) {
    case ChatTemplateFamily::kPlain:
      return {"\nUser:"};
    case ChatTemplateFamily::kChatml:
    case ChatTemplateFamily::kLlama2:
    case ChatTemplateFamily::kLlama3:
    case ChatTemplateFamily::kMistral:
    case ChatTemplateFamily::kZephyr:
    case ChatTemplateFamily::kPhi3:
    case ChatTemplateFamily::kGemma:
      break;
  }
  return {};
}

}  // namespace kvengine::server
