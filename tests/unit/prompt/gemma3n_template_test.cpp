// Gemma 3n: its GGUF chat template (Gemma 3's with audio and image items, testdata/gemma3n) is
// detected as Ollama's gemma3-instruct, which Ollama's gemma3n models also use, and a user turn
// renders as Ollama's Go rendering of that template does (the golden text of
// ../shared/testdata/ollama-templates/testdata/gemma3-instruct.gotmpl/user, which ends in an
// extra newline after the model turn's).
#include <gtest/gtest.h>

#include <filesystem>

#include "server/prompt/prompt.h"
#include "tests/support/file_text.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;

namespace {

std::string read_gemma3n_template() {
  const fs::path p = fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata" /
                     "gemma3n" / "gemma-3n-it.jinja";
  return vkllm::test::file_text(p);
}

}  // namespace

TEST(Gemma3nTemplate, GgufTemplateIsDetectedAsGemma3) {
  const std::string jinja = read_gemma3n_template();
  ASSERT_FALSE(jinja.empty());
  EXPECT_EQ(detect_named_template(jinja).value_or("<none>"), "gemma3-instruct");

  ModelPrompt mp;
  mp.gguf_chat_template = jinja;
  mp.architecture = "gemma3n";
  PromptBuilder b(mp);
  ASSERT_EQ(b.detected_template(), "gemma3-instruct");
  ChatInput in;
  in.messages.push_back({"user", "Hello, how are you?", "", {}, {}, "", ""});
  EXPECT_EQ(b.render_chat(in, 4096, {}).text,
            "<start_of_turn>user\nHello, how are you?<end_of_turn>\n<start_of_turn>model\n\n");
}
