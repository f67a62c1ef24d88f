// Mistral 3 (Ministral 3, Mistral Small 3.x): its GGUF chat templates, whose long default system
// prompts keep them far from any index entry, are detected by their control tokens as
// mistral3-instruct; that template renders the conversations as the model's own Jinja template
// does (testdata/mistral3: system-user and system-user-assistant-user are that template's output
// without BOS; without a system message Ollama's way adds no default prompt; tools as Ollama
// writes JSON, compact), and its tool calls come back through the [TOOL_CALLS] tag.
#include <gtest/gtest.h>

#include <filesystem>

#include "server/prompt/output_parser.h"
#include "server/prompt/prompt.h"
#include "tests/support/file_text.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;

namespace {

const fs::path kDir =
    fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata" / "mistral3";

const char* kSystem = "You are a helpful assistant.";

nlohmann::ordered_json weather_tools() {
  return nlohmann::ordered_json::parse(R"j([{"type": "function", "function": {
      "name": "get_weather", "description": "Current weather of a city",
      "parameters": {"type": "object", "required": ["city"],
                     "properties": {"city": {"type": "string", "description": "The city"}}}}}])j");
}

ChatInput conversation(const std::string& name) {
  ChatInput in;
  if (name.starts_with("system-") || name.starts_with("tools-")) {
    in.messages.push_back({"system", kSystem, "", {}, {}, "", ""});
  }
  if (name.starts_with("tools-")) {
    in.tools = weather_tools();
    in.messages.push_back({"user", "What is the weather in Paris?", "", {}, {}, "", ""});
    Message call{"assistant", "", "", {}, {}, "", ""};
    call.tool_calls.push_back({"", 0, "get_weather", {{"city", "Paris"}}});
    in.messages.push_back(call);
    in.messages.push_back({"tool", R"({"temperature": 18})", "", {}, {}, "get_weather", ""});
    return in;
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

ModelPrompt mistral3_model(const std::string& jinja_file) {
  ModelPrompt mp;
  mp.gguf_chat_template = vkllm::test::file_text(kDir / jinja_file);
  mp.architecture = "mistral3";
  return mp;
}

}  // namespace

TEST(Mistral3Template, GgufTemplatesAreDetectedByTheirControlTokens) {
  for (const char* f :
       {"ministral-3-14b-reasoning-2512.jinja", "mistral-small-3.2-24b-instruct-2506.jinja"}) {
    const std::string jinja = vkllm::test::file_text(kDir / f);
    ASSERT_FALSE(jinja.empty()) << f;
    EXPECT_EQ(detect_named_template(jinja).value_or("<none>"), "mistral3-instruct") << f;
  }
  // Mistral v0.3's tools without Mistral 3's system prompt block stay what they were.
  EXPECT_NE(detect_named_template("[AVAILABLE_TOOLS] [TOOL_CALLS] [INST]").value_or(""),
            "mistral3-instruct");
}

TEST(Mistral3Template, RendersTheGoldenConversations) {
  PromptBuilder b(mistral3_model("ministral-3-14b-reasoning-2512.jinja"));
  ASSERT_EQ(b.detected_template(), "mistral3-instruct");
  EXPECT_TRUE(b.capabilities().tools);
  int cases = 0;
  for (const char* name :
       {"user", "system-user", "system-user-assistant-user", "tools-call-result"}) {
    const std::string want = vkllm::test::file_text(kDir / name);
    ASSERT_FALSE(want.empty()) << name;
    EXPECT_EQ(b.render_chat(conversation(name), 4096, {}).text, want) << name;
    ++cases;
  }
  EXPECT_EQ(cases, 4);
}

TEST(Mistral3Template, ToolCallsParseFromTheTemplatesTag) {
  PromptBuilder b(mistral3_model("mistral-small-3.2-24b-instruct-2506.jinja"));
  const auto tools = weather_tools();
  const std::string prompt = b.render_chat(conversation("tools-call-result"), 4096, {}).text;
  ParserConfig cfg = b.parser_config(tools, {}, prompt);
  EXPECT_EQ(cfg.tool_tag, "[TOOL_CALLS]");
  EXPECT_TRUE(cfg.tool_name_then_args);  // forced calls are written NAME[ARGS]{...} too
  ASSERT_EQ(cfg.tool_names, std::vector<std::string>{"get_weather"});
  OutputParser parser(cfg);
  ParsedDelta out = parser.feed(R"([TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"})");
  ParsedDelta rest = parser.finish();
  out.content += rest.content;
  out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, nlohmann::ordered_json({{"city", "Lyon"}}));
  EXPECT_EQ(out.content, "");
}
