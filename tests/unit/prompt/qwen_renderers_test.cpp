// Ollama's built-in renderers "qwen3.5" and "qwen3-coder": the conversations of Ollama's own
// renderer tests (model/renderers/qwen35_test.go, qwen3coder_test.go), as request bodies in
// testdata/qwen/*.json, render to the prompts in *.prompt (what Ollama's Go code writes for them,
// worked out from it; its tests check the same strings). Models choose them by RENDERER/PARSER or
// by their GGUF chat template (testdata/qwen/*.jinja: llama.cpp's copies of the published ones).
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

const fs::path kQwenDir =
    fs::path(VKLLM_SOURCE_DIR) / "tests" / "unit" / "prompt" / "testdata" / "qwen";

PromptBuilder builder_for(const std::string& name) {
  ModelPrompt mp;
  mp.renderer = name;
  mp.parser = name;
  mp.architecture = name == "qwen3.5" ? "qwen35" : "qwen3moe";
  return PromptBuilder(mp);
}

Message msg(std::string role, std::string content) {
  return Message{std::move(role), std::move(content), "", {}, {}, "", ""};
}

}  // namespace

TEST(QwenRenderers, RenderOllamasConversationsExactly) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kQwenDir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    const auto spec = ojson::parse(vkllm::test::file_text(entry.path()));
    const std::string want =
        vkllm::test::file_text(fs::path(entry.path()).replace_extension(".prompt"));
    ASSERT_FALSE(want.empty()) << name;
    const PromptBuilder b = builder_for(spec["renderer"].get<std::string>());
    EXPECT_EQ(b.render_chat(chat_input(spec["request"]), 1 << 20, {}).text, want) << name;
    ++cases;
  }
  EXPECT_EQ(cases, 11);
}

TEST(QwenRenderers, ToolSchemasAndArgumentsAsOllamaWritesThem) {
  // Qwen3-Coder writes a property's type list as JSON and every schema key it does not handle
  // itself as <key>value</key> (Ollama ranges over a Go map there; vkllm sorts the keys). Keys
  // Ollama's types do not know ("default") are not written.
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"find",
    "parameters":{"type":"object","required":["q"],"properties":{
      "q":{"type":["string","null"],"description":"what <to> find","default":"x"},
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"enum":[["a"]]}}}}}])");
  ChatInput in;
  in.messages = {msg("user", "go")};
  in.tools = tools;
  const std::string coder = builder_for("qwen3-coder").render_chat(in, 1 << 20, {}).text;
  EXPECT_TRUE(
      coder.starts_with("<|im_start|>system\nYou are Qwen, a helpful AI assistant that can "
                        "interact with a computer to solve tasks.\n\n# Tools\n\n"))
      << coder;
  EXPECT_NE(
      coder.find("<parameter>\n<name>q</name>\n<type>[\"string\",\"null\"]</type>\n"
                 "<description>what <to> find</description>\n</parameter>\n"
                 "<parameter>\n<name>tags</name>\n<type>array</type>\n"
                 "<enum>[[\"a\"]]</enum>\n<items>{\"maxLength\":3,\"type\":\"string\"}</items>\n"
                 "</parameter>\n<required>[\"q\"]</required>\n</parameters>"),
      std::string::npos)
      << coder;
  // Qwen 3.5: Go's JSON of the tool (HTML characters escaped, unknown keys dropped) with spaces.
  const std::string qwen35 = builder_for("qwen3.5").render_chat(in, 1 << 20, {}).text;
  EXPECT_NE(
      qwen35.find("\n{\"type\": \"function\", \"function\": {\"name\": \"find\", \"parameters\": "
                  "{\"type\": \"object\", \"required\": [\"q\"], \"properties\": {\"q\": "
                  "{\"type\": [\"string\", \"null\"], \"description\": \"what \\u003cto\\u003e "
                  "find\"}, \"tags\": {\"type\": \"array\", \"items\": {\"maxLength\": 3, "
                  "\"type\": \"string\"}, \"enum\": [[\"a\"]]}}}}}\n</tools>"),
      std::string::npos)
      << qwen35;

  // Argument values: strings bare, numbers as Go prints a float64, objects as compact JSON.
  EXPECT_EQ(qwen_argument_text("a \"b\""), "a \"b\"");
  EXPECT_EQ(qwen_argument_text(42), "42");
  EXPECT_EQ(qwen_argument_text(2.5), "2.5");
  EXPECT_EQ(qwen_argument_text(1000000), "1e+06");
  EXPECT_EQ(qwen_argument_text(true), "true");
  EXPECT_EQ(qwen_argument_text(nullptr), "null");
  EXPECT_EQ(qwen_argument_text(ojson::parse(R"({"z":1,"a":[1.5,"<"]})")),
            R"({"a":[1.5,"\u003c"],"z":1})");
}

TEST(QwenRenderers, ImagesBecomeNumberedTagsInQwen35) {
  ChatInput in;
  Message first = msg("user", "What is this?");
  first.images = {"a", "b"};
  Message second = msg("user", "And [img] here?");
  second.images = {"c"};
  in.messages = {first, msg("assistant", "A cat."), second};
  const Rendered r = builder_for("qwen3.5").render_chat(in, 1 << 20, {});
  EXPECT_EQ(r.text,
            "<|im_start|>user\n[img-0][img-1] What is this?<|im_end|>\n"
            "<|im_start|>assistant\nA cat.<|im_end|>\n"
            "<|im_start|>user\nAnd [img-2] here?<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(r.images, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(QwenRenderers, GenerateRendersAsAChat) {
  GenerateInput in;
  in.prompt = "Why is the sky blue?";
  in.system = "Be brief.";
  EXPECT_EQ(builder_for("qwen3.5").render_generate(in).text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?"
            "<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(builder_for("qwen3-coder").render_generate(in).text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?"
            "<|im_end|>\n<|im_start|>assistant\n");
}

TEST(QwenRenderers, ChosenByNameOrByTheGgufTemplate) {
  const std::string qwen35_jinja = vkllm::test::file_text(kQwenDir / "Qwen3.5-4B.jinja");
  const std::string coder_jinja = vkllm::test::file_text(kQwenDir / "Qwen3-Coder.jinja");
  ASSERT_FALSE(qwen35_jinja.empty());
  ASSERT_FALSE(coder_jinja.empty());
  EXPECT_EQ(detect_builtin_format(qwen35_jinja).value_or(BuiltinFormat{}).renderer, "qwen3.5");
  EXPECT_EQ(detect_builtin_format(coder_jinja).value_or(BuiltinFormat{}).parser, "qwen3-coder");
  // Qwen 3's template (JSON tool calls, no XML example) is not one of them.
  EXPECT_FALSE(detect_builtin_format("<|im_start|>{{ '<tool_call>\\n{\"name\": ' }}<think>"));

  ModelPrompt from_gguf;
  from_gguf.gguf_chat_template = qwen35_jinja;
  from_gguf.architecture = "qwen35";
  PromptBuilder b(from_gguf);
  EXPECT_EQ(b.builtin_renderer_name(), "qwen3.5");
  EXPECT_EQ(b.builtin_parser_name(), "qwen3.5");
  EXPECT_TRUE(b.capabilities().tools);
  EXPECT_TRUE(b.capabilities().thinking);
  ChatInput in;
  in.messages = {msg("user", "hi")};
  EXPECT_EQ(b.render_chat(in, 1 << 20, {}).text,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");

  ModelPrompt coder;
  coder.gguf_chat_template = coder_jinja;
  PromptBuilder c(coder);
  EXPECT_EQ(c.builtin_renderer_name(), "qwen3-coder");
  EXPECT_TRUE(c.capabilities().tools);
  EXPECT_FALSE(c.capabilities().thinking);

  // A TEMPLATE layer wins over the GGUF's template; RENDERER wins over TEMPLATE.
  ModelPrompt with_template = from_gguf;
  with_template.template_text = "{{ .Prompt }}";
  EXPECT_EQ(PromptBuilder(with_template).builtin_renderer_name(), "");
  with_template.renderer = "qwen3-coder";
  EXPECT_EQ(PromptBuilder(with_template).builtin_renderer_name(), "qwen3-coder");
  EXPECT_EQ(PromptBuilder(with_template).builtin_parser_name(), "");
  // Unknown names render with the template, as before.
  ModelPrompt unknown;
  unknown.renderer = "qwen3.8";
  unknown.parser = "glm-4.7";
  PromptBuilder u(unknown);
  EXPECT_EQ(u.builtin_renderer_name(), "");
  EXPECT_EQ(u.builtin_parser_name(), "");
  EXPECT_FALSE(u.capabilities().tools);
}

TEST(QwenRenderers, ParserConfigFollowsThinkAndPrefill) {
  const PromptBuilder b = builder_for("qwen3.5");
  const ojson tools = ojson::parse(R"([{"type":"function","function":{"name":"f"}}])");
  Think on{true, true, "medium"}, off{true, false, ""};
  ParserConfig c = b.parser_config(tools, on, "ignored");
  EXPECT_EQ(c.builtin_parser, "qwen3.5");
  EXPECT_TRUE(c.thinking);
  EXPECT_FALSE(c.assistant_prefill);
  EXPECT_EQ(c.tools, tools);
  EXPECT_FALSE(b.parser_config(tools, off, "").thinking);
  const Message prefill = msg("assistant", "Partial");
  EXPECT_TRUE(b.parser_config(tools, on, "", &prefill).assistant_prefill);
  const Message empty = msg("assistant", "");
  EXPECT_FALSE(b.parser_config(tools, on, "", &empty).assistant_prefill);
  EXPECT_FALSE(builder_for("qwen3-coder").parser_config(tools, on, "").thinking);
}

TEST(QwenRenderers, TruncationDropsTheOldestTurnsAndKeepsTheSystem) {
  // As with templates (compat §6.4): the oldest messages go until the prompt fits num_ctx; the
  // system message and the last message stay. Counting bytes as tokens keeps the sizes exact.
  const PromptBuilder b = builder_for("qwen3-coder");
  ChatInput in;
  in.messages = {msg("system", "S"), msg("user", std::string(200, 'a')), msg("assistant", "B"),
                 msg("user", "last")};
  const TokenCounter bytes = [](std::string_view text) { return text.size(); };
  ChatInput kept;
  kept.messages = {msg("system", "S"), msg("assistant", "B"), msg("user", "last")};
  const std::string want = b.render_chat(kept, 1 << 20, {}).text;
  EXPECT_EQ(b.render_chat(in, static_cast<uint32_t>(want.size()), bytes).text, want);
  // With room for everything nothing goes.
  EXPECT_NE(b.render_chat(in, 1 << 20, bytes).text.find(std::string(200, 'a')), std::string::npos);
}
