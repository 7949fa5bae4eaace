#include "server/chat_template.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvengine::server {
namespace {

const std::vector<ChatMessage> kConversation = {
    {ChatRole::kSystem, "Be brief."},
    {ChatRole::kUser, "Hi"},
    {ChatRole::kAssistant, "Hello!"},
    {ChatRole::kUser, "Bye"},
};

// Template sources as they appear in GGUF files (abridged to their signatures).
TEST(ChatTemplateTest, DetectsFamiliesBySignature) {
  struct Case {
    const char* source;
    ChatTemplateFamily family;
  };
  const Case cases[] = {
      {"", ChatTemplateFamily::kPlain},
      {"{{ messages }}", ChatTemplateFamily::kPlain},
      {"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + "
       "'<|im_end|>\\n'}}{% endfor %}",
       ChatTemplateFamily::kChatml},
      {"{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
       "<|end_header_id|>\\n\\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}",
       ChatTemplateFamily::kLlama3},
      {"{% if messages[0]['role'] == 'system' %}<<SYS>>\\n{% endif %}[INST] {{ content }} "
       "[/INST]",
       ChatTemplateFamily::kLlama2},
      {"{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}",
       ChatTemplateFamily::kMistral},
      {"{% for m in messages %}<|user|>\\n{{ m['content'] }}</s>{% endfor %}",
       ChatTemplateFamily::kZephyr},
      {"{% for m in messages %}<|user|>\\n{{ m['content'] }}<|end|>{% endfor %}",
       ChatTemplateFamily::kPhi3},
      {"{% for m in messages %}<start_of_turn>{{ role }}\\n{{ m['content'] }}<end_of_turn>"
       "{% endfor %}",
       ChatTemplateFamily::kGemma},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChatTemplate::Detect(c.source).family(), c.family) << c.source;
  }
}

std::string Render(ChatTemplateFamily f) { return ChatTemplate(f).Render(kConversation); }

TEST(ChatTemplateTest, RendersEachFamily) {
  EXPECT_EQ(Render(ChatTemplateFamily::kChatml),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(Render(ChatTemplateFamily::kLlama3),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(Render(ChatTemplateFamily::kLlama2),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(Render(ChatTemplateFamily::kMistral),
            "[INST] Be brief.\n\nHi [/INST] Hello!</s>[INST] Bye [/INST]");
  EXPECT_EQ(Render(ChatTemplateFamily::kZephyr),
            "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n"
            "<|user|>\nBye</s>\n<|assistant|>\n");
  EXPECT_EQ(Render(ChatTemplateFamily::kPhi3),
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
            "<|user|>\nBye<|end|>\n<|assistant|>\n");
  EXPECT_EQ(Render(ChatTemplateFamily::kGemma),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!"
            "<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(Render(ChatTemplateFamily::kPlain),
            "System: Be brief.\nUser: Hi\nAssistant: Hello!\nUser: Bye\nAssistant:");
}

TEST(ChatTemplateTest, SystemOnlyAndUserOnly) {
  const std::vector<ChatMessage> system_only = {{ChatRole::kSystem, "S"}};
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kGemma).Render(system_only),
            "<start_of_turn>user\nS<end_of_turn>\n<start_of_turn>model\n");
  const std::vector<ChatMessage> user_only = {{ChatRole::kUser, "U"}};
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kLlama2).Render(user_only), "[INST] U [/INST]");
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kPlain).Render(user_only), "User: U\nAssistant:");
}

TEST(ChatTemplateTest, TemplateTextIsNeverExecuted) {
  // A hostile template that would loop forever or read files if it were run: only its
  // signatures matter.
  const ChatTemplate t = ChatTemplate::Detect(
      "{% for i in range(999999999) %}{% include '/etc/passwd' %}{% endfor %}<|im_start|>");
  EXPECT_EQ(t.family(), ChatTemplateFamily::kChatml);
  EXPECT_EQ(t.end_of_turn(), "<|im_end|>");
}

TEST(ChatTemplateTest, EndOfTurnAndImplicitStops) {
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kLlama3).end_of_turn(), "<|eot_id|>");
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kGemma).end_of_turn(), "<end_of_turn>");
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kLlama2).end_of_turn(), "");
  EXPECT_EQ(ChatTemplate().implicit_stops(), std::vector<std::string>{"\nUser:"});
  EXPECT_TRUE(ChatTemplate(ChatTemplateFamily::kChatml).implicit_stops().empty());
  EXPECT_EQ(ChatTemplate(ChatTemplateFamily::kPhi3).name(), "phi3");
}

}  // namespace
}  // namespace kvengine::server
