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

std::string RenderLlama2(std::span<const ChatMessage> messages) {
  std::string out;
  std::string system;
  bool open_inst = false;  // "[INST]" written, "[/INST]" pending.
  for (const ChatMessage& m : messages) {
    switch (m.role) {
      case ChatRole::kSystem:
        system += (system.empty() ? "" : "\n") + m.content;
        break;
      case ChatRole::kUser:
        if (open_inst) {  // Consecutive user messages share one [INST] block.
          out += "\n";
        } else {
          out += "[INST] ";
          if (!system.empty()) {
            out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
            system.clear();
          }
        }
        out += Trim(m.content);
        open_inst = true;
        break;
      case ChatRole::kAssistant:
        out += open_inst ? " [/INST] " : "[INST] [/INST] ";
        out += Trim(m.content);
        out += " </s><s>";
        open_inst = false;
        break;
    }
  }
  if (open_inst) {
    out += " [/INST]";
  } else if (!system.empty()) {
    out += "[INST] <<SYS>>\n" + system + "\n<</SYS>>\n\n [/INST]";
  }
  return out;
}

std::string RenderMistral(std::span<const ChatMessage> messages) {
  std::string out;
  for (const ChatMessage& m : FoldSystemIntoFirstUser(messages)) {
    if (m.role == ChatRole::kUser) {
      out += "[INST] " + m.content + " [/INST]";
    } else {
      out += " " + m.content + "</s>";
    }
  }
  return out;
}

std::string RenderGemma(std::span<const ChatMessage> messages) {
  std::string out;
  for (const ChatMessage& m : FoldSystemIntoFirstUser(messages)) {
    out += "<start_of_turn>";
    out += m.role == ChatRole::kAssistant ? "model" : "user";
    out += "\n";
    out += Trim(m.content);
    out += "<end_of_turn>\n";
  }
  return out + "<start_of_turn>model\n";
}

std::string RenderPlain(std::span<const ChatMessage> messages) {
  std::string out;
  for (const ChatMessage& m : messages) {
    switch (m.role) {
      case ChatRole::kSystem:
        out += "System: ";
        break;
      case ChatRole::kUser:
        out += "User: ";
        break;
      case ChatRole::kAssistant:
        out += "Assistant: ";
        break;
    }
    out += m.content + "\n";
  }
  return out + "Assistant:";
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

std::string ChatTemplate::Render(std::span<const ChatMessage> messages) const {
  std::string out;
  switch (family_) {
    case ChatTemplateFamily::kLlama3:
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>";
        out += RoleName(m.role);
        out += "<|end_header_id|>\n\n";
        out += Trim(m.content);
        out += "<|eot_id|>";
      }
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatTemplateFamily::kChatml:
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>";
        out += RoleName(m.role);
        out += "\n" + m.content + "<|im_end|>\n";
      }
      return out + "<|im_start|>assistant\n";
    case ChatTemplateFamily::kPhi3:
    case ChatTemplateFamily::kZephyr: {
      const std::string_view end = family_ == ChatTemplateFamily::kPhi3 ? "<|end|>" : "</s>";
      for (const ChatMessage& m : messages) {
        out += "<|";
        out += RoleName(m.role);
        out += "|>\n" + m.content;
        out += end;
        out += "\n";
      }
      return out + "<|assistant|>\n";
    }
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
