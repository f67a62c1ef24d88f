// Gemma 4: its GGUF chat template (llama.cpp's models/templates copy of the published one),
// far from every index entry, is detected by its turn and channel tokens as gemma4-instruct;
// that template renders the conversations as the model's own Jinja template does
// (testdata/gemma4: its output without BOS, rendered by Python's jinja2; think-*: with
// enable_thinking, whose <|think|> opens a system turn and whose model turn has no empty thought
// channel, an earlier answer's thinking dropped); the conversations come out the same through
// Ollama's built-in gemma4-large renderer, which the template selects (gemma4_renderer_test.cpp
// has the renderer's own cases). Ollama's gemma4 models (RENDERER gemma4) and a gemma4 GGUF
// without a chat template get the small models' renderer. With think on, the output's thought
// channel (<|channel>thought ... <channel|>) is the thinking.
#include <gtest/gtest.h>

#include <filesystem>

#include "server/prompt/output_parser.h"
#include "server/prompt/prompt.h"
#include "tests/support/file_text.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;

namespace {

const fs::path kGemma4Dir =
    fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata" / "gemma4";

std::string read_gemma4(const std::string& name) {
  return vkllm::test::file_text(kGemma4Dir / name);
}

ChatInput gemma4_conversation(const std::string& name) {
  ChatInput in;
  if (name.starts_with("think-")) in.think = {true, true, "medium"};
  if (name.find("system-") != std::string::npos) {
    in.messages.push_back({"system", "You are a helpful assistant.", "", {}, {}, "", ""});
  }
  in.messages.push_back({"user", "Hello, how are you?", "", {}, {}, "", ""});
  if (name.find("user-assistant-user") != std::string::npos) {
    in.messages.push_back(
        {"assistant", "I'm doing great. How can I help you today?", "", {}, {}, "", ""});
    // The thinking of an answer before the last user turn is not rendered.
    if (name.starts_with("think-")) in.messages.back().thinking = "The user greets me.";
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
  ASSERT_EQ(b.builtin_renderer_name(), "gemma4-large");
  for (const char* name : {"user", "system-user", "system-user-assistant-user", "think-user",
                           "think-system-user-assistant-user"}) {
    const std::string want = read_gemma4(name);
    ASSERT_FALSE(want.empty()) << name;
    EXPECT_EQ(b.render_chat(gemma4_conversation(name), 4096, {}).text, want) << name;
  }
}

TEST(Gemma4Template, OllamasRendererAndTheArchitectureChooseItWithoutATemplate) {
  ModelPrompt by_renderer;
  by_renderer.renderer = "gemma4";  // Ollama's gemma4 models: RENDERER gemma4, no TEMPLATE
  EXPECT_EQ(PromptBuilder(by_renderer).detected_template(), "gemma4-instruct");
  EXPECT_EQ(PromptBuilder(by_renderer).builtin_renderer_name(), "gemma4");
  ModelPrompt by_arch;
  by_arch.architecture = "gemma4";  // a GGUF without a chat template: Ollama's gemma4 format
  PromptBuilder b(by_arch);
  EXPECT_EQ(b.detected_template(), "gemma4-instruct");
  EXPECT_EQ(b.builtin_renderer_name(), "gemma4");
  EXPECT_EQ(b.builtin_parser_name(), "gemma4");
  // The small models' renderer: no empty thought channel when not thinking.
  std::string want = read_gemma4("system-user");
  want.erase(want.rfind("<|channel>thought\n<channel|>"));
  EXPECT_EQ(b.render_chat(gemma4_conversation("system-user"), 4096, {}).text, want);
  ModelPrompt other;
  other.architecture = "gemma3";
  EXPECT_NE(PromptBuilder(other).detected_template(), "gemma4-instruct");
}

TEST(Gemma4Template, ThinkingIsItsThoughtChannel) {
  ModelPrompt mp;
  mp.architecture = "gemma4";
  PromptBuilder b(mp);
  EXPECT_TRUE(b.capabilities().thinking);
  const Think on{true, true, "medium"};
  const ParserConfig cfg = b.parser_config(nullptr, on, "<|turn>model\n");
  // Its channel tokens may be control tokens: the reply is decoded with them as text.
  EXPECT_TRUE(cfg.special_tokens);
  EXPECT_EQ(cfg.builtin_parser, "gemma4");
  const Think off{true, false, ""};
  EXPECT_FALSE(b.parser_config(nullptr, off, "<|turn>model\n").thinking);
  OutputParser parser(cfg);
  ParsedDelta got = parser.feed("<|channel>thought\nThe user greets me.\n<chan");
  const ParsedDelta rest = parser.feed("nel|>Hello! How can I help?");
  got.thinking += rest.thinking;
  got.content += rest.content;
  const ParsedDelta end = parser.finish();
  got.thinking += end.thinking;
  got.content += end.content;
  EXPECT_EQ(got.thinking, "The user greets me.");  // Ollama trims it
  EXPECT_EQ(got.content, "Hello! How can I help?");
}
