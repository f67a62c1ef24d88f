// Gemma 4: its GGUF chat template (llama.cpp's models/templates copy of the published one),
// far from every index entry, is detected by its turn and channel tokens as gemma4-instruct;
// that template renders the conversations as the model's own Jinja template does
// (testdata/gemma4: its output without BOS, thinking off, rendered by Python's jinja2). Ollama's
// gemma4 models (RENDERER gemma4) and a gemma4 GGUF without a chat template get it too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/prompt/prompt.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;

namespace {

const fs::path kGemma4Dir =
    fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata" / "gemma4";

std::string read_gemma4(const std::string& name) {
  std::ifstream f(kGemma4Dir / name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ChatInput gemma4_conversation(const std::string& name) {
  ChatInput in;
  if (name.starts_with("system-")) {
    in.messages.push_back({"system", "You are a helpful assistant.", "", {}, {}, "", ""});
  }
  in.messages.push_back({"user", "Hello, how are you?", "", {}, {}, "", ""});
  if (name.find("user-assistant-user") != std::string::npos) {
    in.messages.push_back(
        {"assistant", "I'm doing great. How can I help you today?", "", {}, {}, "", ""});
    in.messages.push_back(
        {"user", "I'd like to show off how chat templating works!", "", {}, {}, "", ""});
  }
  return in;
}

}  // namespace

TEST(Gemma4Template, GgufTemplateIsDetectedByItsTurnTokens) {
  const std::string jinja = read_gemma4("google-gemma-4-31B-it.jinja");
  ASSERT_FALSE(jinja.empty());
  EXPECT_EQ(detect_named_template(jinja).value_or("<none>"), "gemma4-instruct");
  // Gemma 3's turns stay Gemma 3's.
  EXPECT_NE(detect_named_template("<start_of_turn>user <end_of_turn>").value_or(""),
            "gemma4-instruct");
}

TEST(Gemma4Template, RendersTheGoldenConversations) {
  ModelPrompt mp;
  mp.gguf_chat_template = read_gemma4("google-gemma-4-31B-it.jinja");
  mp.architecture = "gemma4";
  PromptBuilder b(mp);
  ASSERT_EQ(b.detected_template(), "gemma4-instruct");
  for (const char* name : {"user", "system-user", "system-user-assistant-user"}) {
    const std::string want = read_gemma4(name);
    ASSERT_FALSE(want.empty()) << name;
    EXPECT_EQ(b.render_chat(gemma4_conversation(name), 4096, {}).text, want) << name;
  }
}

TEST(Gemma4Template, OllamasRendererAndTheArchitectureChooseItWithoutATemplate) {
  ModelPrompt by_renderer;
  by_renderer.renderer = "gemma4";  // Ollama's gemma4 models: RENDERER gemma4, no TEMPLATE
  EXPECT_EQ(PromptBuilder(by_renderer).detected_template(), "gemma4-instruct");
  ModelPrompt by_arch;
  by_arch.architecture = "gemma4";  // a GGUF without a chat template
  PromptBuilder b(by_arch);
  EXPECT_EQ(b.detected_template(), "gemma4-instruct");
  EXPECT_EQ(b.render_chat(gemma4_conversation("system-user"), 4096, {}).text,
            read_gemma4("system-user"));
  ModelPrompt other;
  other.architecture = "gemma3";
  EXPECT_NE(PromptBuilder(other).detected_template(), "gemma4-instruct");
}
