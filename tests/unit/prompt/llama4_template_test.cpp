// Llama 4: a GGUF chat template with Llama 4's header and end-of-turn tokens (none is within reach
// of Ollama's index) is detected as llama4-instruct, which renders a conversation as llama.cpp's
// built-in llama4 chat format does (llama-chat.cpp: "<|header_start|>ROLE<|header_end|>\n\n"
// CONTENT "<|eot|>" per message, then the assistant's header), and stops at the end of a turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "server/prompt/prompt.h"

using namespace vkllm::prompt;

namespace {

// The parts of Llama 4's Jinja template that carry its control tokens.
constexpr const char* kLlama4Jinja =
    "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}<|header_start|>system"
    "<|header_end|>\n\n{{- system_message }}<|eot|>{%- endif %}{%- for message in messages %}"
    "{{- '<|header_start|>' + message['role'] + '<|header_end|>\n\n' }}{{- message['content'] }}"
    "{{- '<|eot|>' }}{%- endfor %}{%- if add_generation_prompt %}"
    "{{- '<|header_start|>assistant<|header_end|>\n\n' }}{%- endif %}";

}  // namespace

TEST(Llama4Template, DetectedByItsTokensAndRenderedAsLlamaCppDoes) {
  EXPECT_EQ(detect_named_template(kLlama4Jinja).value_or("<none>"), "llama4-instruct");
  ModelPrompt mp;
  mp.gguf_chat_template = kLlama4Jinja;
  mp.architecture = "llama4";
  PromptBuilder b(mp);
  ASSERT_EQ(b.detected_template(), "llama4-instruct");
  ChatInput in;
  in.messages.push_back({"system", "You are a helpful assistant.", "", {}, {}, "", ""});
  in.messages.push_back({"user", "Hello, how are you?", "", {}, {}, "", ""});
  in.messages.push_back({"assistant", "Fine, thanks.", "", {}, {}, "", ""});
  in.messages.push_back({"user", "Tell me a joke.", "", {}, {}, "", ""});
  EXPECT_EQ(b.render_chat(in, 4096, {}).text,
            "<|header_start|>system<|header_end|>\n\nYou are a helpful assistant.<|eot|>"
            "<|header_start|>user<|header_end|>\n\nHello, how are you?<|eot|>"
            "<|header_start|>assistant<|header_end|>\n\nFine, thanks.<|eot|>"
            "<|header_start|>user<|header_end|>\n\nTell me a joke.<|eot|>"
            "<|header_start|>assistant<|header_end|>\n\n");
  const auto stops =
      named_template_parameters("llama4-instruct").value("stop", std::vector<std::string>{});
  EXPECT_NE(std::find(stops.begin(), stops.end(), "<|eot|>"), stops.end());
}
