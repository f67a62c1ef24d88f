// Ollama's built-in renderers "gemma4" ("gemma4-small"), "gemma4-large", "lfm2" and
// "lfm2-thinking": the conversations of Ollama's own renderer tests render to the prompts in
// testdata/gemma4/renderer_cases.json (Google's chat templates rendered by jinja2, or Ollama's
// stated prompt where it differs on purpose) and testdata/lfm2/renderer_cases.json (Ollama's
// stated prompts); tests/reference/tools/*_renderer_cases.py re-record them. Models choose the
// renderers by RENDERER/PARSER or by their GGUF chat template; a Ministral model keeps its
// template and names only PARSER ministral.
#include <gtest/gtest.h>

#include <filesystem>

#include "chat_request_util.h"
#include "server/prompt/builtin_renderers.h"
#include "server/prompt/prompt.h"
#include "tests/support/file_text.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;
using ojson = nlohmann::ordered_json;
using vkllm::prompt::testing::chat_input;

namespace {

const fs::path kTestdata = fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata";

PromptBuilder named(const std::string& renderer, const std::string& parser) {
  ModelPrompt mp;
  mp.renderer = renderer;
  mp.parser = parser;
  return PromptBuilder(mp);
}

// Renders every case of a cases file; returns how many there were.
int render_cases(const fs::path& file) {
  const ojson cases = ojson::parse(vkllm::test::file_text(file));
  int n = 0;
  for (const auto& c : cases) {
    const std::string name =
        c["name"].get<std::string>() + " (" + c["renderer"].get<std::string>() + ")";
    const PromptBuilder b = named(c["renderer"], "");
    EXPECT_EQ(b.render_chat(chat_input(c["request"]), 1 << 20, {}).text, c["prompt"]) << name;
    ++n;
  }
  return n;
}

ModelPrompt from_gguf(const fs::path& jinja, const std::string& arch) {
  ModelPrompt mp;
  mp.gguf_chat_template = vkllm::test::file_text(jinja);
  mp.architecture = arch;
  return mp;
}

Message text(std::string role, std::string content) {
  return Message{std::move(role), std::move(content), "", {}, {}, "", ""};
}

}  // namespace

TEST(BuiltinRenderers, Gemma4RendersOllamasConversationsExactly) {
  EXPECT_EQ(render_cases(kTestdata / "gemma4" / "renderer_cases.json"), 47);
}

TEST(BuiltinRenderers, Lfm2RendersOllamasConversationsExactly) {
  EXPECT_EQ(render_cases(kTestdata / "lfm2" / "renderer_cases.json"), 18);
}

TEST(BuiltinRenderers, ChosenByTheGgufTemplate) {
  struct Case {
    fs::path jinja;
    std::string arch, renderer, parser;
  };
  const fs::path g = kTestdata / "gemma4", l = kTestdata / "lfm2";
  for (const Case& c :
       {Case{g / "gemma4_e2b.jinja", "gemma4", "gemma4", "gemma4"},
        Case{g / "gemma4_31b.jinja", "gemma4", "gemma4-large", "gemma4"},
        Case{g / "google-gemma-4-31B-it.jinja", "gemma4", "gemma4-large", "gemma4"},
        Case{l / "LFM2-8B-A1B.jinja", "lfm2moe", "lfm2", "lfm2"},
        Case{l / "LFM2.5-8B-A1B.jinja", "lfm2moe", "lfm2-thinking", "lfm2-thinking"}}) {
    const PromptBuilder b(from_gguf(c.jinja, c.arch));
    EXPECT_EQ(b.builtin_renderer_name(), c.renderer) << c.jinja;
    EXPECT_EQ(b.builtin_parser_name(), c.parser) << c.jinja;
  }
  // Gemma 4's thinks and calls tools; LFM2 without its thinking variant only calls tools.
  const PromptBuilder gemma(from_gguf(g / "gemma4_e2b.jinja", "gemma4"));
  EXPECT_TRUE(gemma.capabilities().tools && gemma.capabilities().thinking);
  const PromptBuilder lfm2(from_gguf(l / "LFM2-8B-A1B.jinja", "lfm2moe"));
  EXPECT_TRUE(lfm2.capabilities().tools);
  EXPECT_FALSE(lfm2.capabilities().thinking);
  // Mistral 3 keeps its named template and the template's tool parsing; Ollama's ministral models
  // name PARSER ministral beside their TEMPLATE.
  const PromptBuilder mistral(
      from_gguf(kTestdata / "mistral3" / "ministral-3-14b-reasoning-2512.jinja", "mistral3"));
  EXPECT_EQ(mistral.builtin_parser_name(), "");
  ModelPrompt ministral =
      from_gguf(kTestdata / "mistral3" / "ministral-3-14b-reasoning-2512.jinja", "mistral3");
  ministral.parser = "ministral";
  const PromptBuilder m(ministral);
  EXPECT_EQ(m.builtin_renderer_name(), "");
  EXPECT_EQ(m.detected_template(), "mistral3-instruct");
  EXPECT_EQ(m.builtin_parser_name(), "ministral");
  EXPECT_TRUE(m.capabilities().tools);
  EXPECT_FALSE(m.capabilities().thinking);
}

TEST(BuiltinRenderers, Gemma4StopsAfterACallAtItsToolResponseMarker) {
  // After <|tool_call>...<tool_call|> the model writes <|tool_response> and waits for the result
  // (an end-of-generation token in llama.cpp's Gemma 4 vocabulary): a stop word here.
  for (const char* renderer : {"gemma4", "gemma4-large"}) {
    const auto stops = named(renderer, "gemma4").default_parameters().at("stop");
    EXPECT_EQ(stops, ojson::parse(R"(["<turn|>", "<|tool_response>"])")) << renderer;
  }
  ModelPrompt arch;
  arch.architecture = "gemma4";
  EXPECT_EQ(PromptBuilder(arch).default_parameters().at("stop").size(), 2u);
}

TEST(BuiltinRenderers, Gemma4ImagesNumberToolResultsFirstAndDropTheSystemsImages) {
  // Gemma 4 writes a call's results before the answer that carries them, so the result's image
  // takes the first tag; the system message's image gets none (Ollama renders only its text).
  std::vector<Message> msgs = {text("system", "S"), text("user", "Look"),
                               text("assistant", "Seen")};
  msgs[0].images = {"sys"};
  msgs[1].images = {"u1", "u2"};
  msgs[2].images = {"answer"};
  msgs[2].tool_calls.push_back({"", 0, "zoom", {{"x", 1}}});
  msgs.push_back(text("tool", "zoomed"));
  msgs.back().tool_name = "zoom";
  msgs.back().images = {"result"};
  ChatInput in;
  in.messages = msgs;
  const Rendered r = named("gemma4", "gemma4").render_chat(in, 1 << 20, {});
  EXPECT_EQ(r.images, (std::vector<std::string>{"u1", "u2", "result", "answer"}));
  EXPECT_NE(r.text.find("<|turn>user\n[img-0][img-1] Look<turn|>"), std::string::npos) << r.text;
  EXPECT_NE(
      r.text.find("response:zoom{value:<|\"|>[img-2] zoomed<|\"|>}<tool_response|>[img-3] Seen"),
      std::string::npos)
      << r.text;
}

TEST(BuiltinRenderers, Lfm2ImagesCountTheSystemsImages) {
  // Ollama's LFM2 renderer numbers tags over every message's images, the system's (untagged) too.
  std::vector<Message> msgs = {text("system", "S"), text("user", "Look [img] here")};
  msgs[0].images = {"sys"};
  msgs[1].images = {"u1"};
  ChatInput in;
  in.messages = msgs;
  const Rendered r = named("lfm2", "lfm2").render_chat(in, 1 << 20, {});
  EXPECT_EQ(r.images, (std::vector<std::string>{"sys", "u1"}));
  EXPECT_EQ(r.text,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nLook [img-1] here<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(BuiltinRenderers, ParserConfigThinksOnlyWhenAskedAndDecodesControlTokens) {
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"f"}}])");
  const Think on{true, true, "medium"}, off{true, false, ""}, unset{};
  const Message tool_result = text("tool", "42");
  for (const char* parser : {"gemma4", "lfm2-thinking"}) {
    const PromptBuilder b = named("", parser);
    EXPECT_TRUE(b.parser_config(tools, on, "").thinking) << parser;
    EXPECT_FALSE(b.parser_config(tools, off, "").thinking) << parser;
    EXPECT_FALSE(b.parser_config(tools, unset, "").thinking) << parser;  // Ollama: think nil
    const ParserConfig c = b.parser_config(tools, on, "", &tool_result);
    EXPECT_TRUE(c.after_tool_result && c.special_tokens) << parser;
    EXPECT_EQ(c.tool_names, std::vector<std::string>{"f"}) << parser;
  }
  EXPECT_FALSE(named("", "gemma4-no-thinking").parser_config(tools, on, "").thinking);
  EXPECT_FALSE(named("", "ministral").parser_config(tools, on, "").thinking);
  EXPECT_TRUE(named("", "ministral").parser_config(tools, on, "").special_tokens);
}
