// From template to parsed output: PromptBuilder derives the tags from a model's TEMPLATE (compat
// §5.5) and the OutputParser reads that family's output with them, whole and streamed.
#include <gtest/gtest.h>

#include "tests/unit/prompt/output_parser_test_util.h"

namespace vkllm::prompt::testing {
namespace {

const nlohmann::ordered_json kTools = nlohmann::ordered_json::parse(R"j([
  {"type": "function", "function": {"name": "get_current_weather", "description": "Weather",
   "parameters": {"type": "object", "required": ["location"],
                  "properties": {"location": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "get_time", "description": "Time",
   "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}}}}])j");

// The config a /api/chat request with these tools and `think` gets for this template.
ParserConfig config_for(const std::string& tmpl, Think think) {
  ModelPrompt model;
  model.template_text = tmpl;
  PromptBuilder builder(model);
  ChatInput in;
  in.messages.push_back(Message{"user", "Weather in Paris?", "", {}, {}, "", ""});
  in.tools = kTools;
  in.think = think;
  Rendered r = builder.render_chat(in, 1 << 20, {});
  return builder.parser_config(kTools, think, r.text);
}

void check(const ParserConfig& config, std::string_view text, const Expected& want) {
  SCOPED_TRACE(std::string(text));
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

// Shaped like Ollama's qwen3 TEMPLATE: thinking inside the message range, calls behind
// <tool_call>, and the prompt opening the thinking block when thinking is asked for.
const std::string kQwen3 =
    "{{- if .Tools }}<|im_start|>system\n# Tools\n{{ range .Tools }}{{ .Function }}\n{{ end }}"
    "<|im_end|>\n{{ end }}"
    "{{- range $i, $_ := .Messages }}"
    "{{- if eq .Role \"assistant\" }}<|im_start|>assistant\n"
    "{{- if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}"
    "{{- if .Content }}{{ .Content }}{{ else if .ToolCalls }}<tool_call>\n"
    "{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": "
    "{{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ end }}<|im_end|>\n"
    "{{- else }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
    "{{- end }}<|im_start|>assistant\n{{ if .Think }}<think>\n{{ end }}";

TEST(OutputParserTemplates, Qwen3ThinkingAndCalls) {
  ParserConfig cfg = config_for(kQwen3, Think{true, true, "medium"});
  EXPECT_TRUE(cfg.thinking);
  EXPECT_TRUE(cfg.starts_in_thinking);
  check(cfg,
        "The user wants Paris weather.\n</think>\n\n<tool_call>\n"
        R"j({"name": "get_current_weather", "arguments": {"location": "Paris"}})j"
        "\n</tool_call>",
        {"",
         "The user wants Paris weather.\n",
         {{"get_current_weather", R"j({"location": "Paris"})j"}}});
  // think: false: no thinking split, the tags (had the model written them) stay content.
  ParserConfig off = config_for(kQwen3, Think{true, false, ""});
  EXPECT_FALSE(off.thinking);
  check(off,
        "<tool_call>\n"
        R"j({"name": "get_time", "arguments": {}})j"
        "\n</tool_call>",
        {"", "", {{"get_time", "{}"}}});
}

// Shaped like Ollama's llama3.1 TEMPLATE: calls are bare JSON with "parameters", tag "{".
TEST(OutputParserTemplates, Llama31) {
  const std::string tmpl =
      "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
      "{{- if .ToolCalls }}\n{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", "
      "\"parameters\": {{ .Function.Arguments }}}{{ end }}"
      "{{- else }}{{ .Content }}{{ end }}<|eot_id|>{{ end }}"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  ParserConfig cfg = config_for(tmpl, Think{});
  check(cfg,
        R"j(<|python_tag|>{"name": "get_current_weather", "parameters": {"location": "Paris"}})j",
        {"", "", {{"get_current_weather", R"j({"location": "Paris"})j"}}});
  check(cfg, "It is sunny in Paris today.", {"It is sunny in Paris today.", "", {}});
}

// Shaped like Ollama's mistral TEMPLATE, whose tag is "[TOOL_CALLS][" (cut at the first "{"):
// the model writing "[TOOL_CALLS] [" or the newer name[ARGS] form is still read.
TEST(OutputParserTemplates, Mistral) {
  const std::string tmpl =
      "{{- range .Messages }}{{- if eq .Role \"user\" }}[INST] {{ .Content }}[/INST]"
      "{{- else if .ToolCalls }}[TOOL_CALLS][{{ range .ToolCalls }}{\"name\": \""
      "{{ .Function.Name }}\", \"arguments\": {{ .Function.Arguments }}}{{ end }}]</s>"
      "{{- else }} {{ .Content }}</s>{{ end }}{{ end }}";
  ParserConfig cfg = config_for(tmpl, Think{});
  EXPECT_EQ(cfg.tool_tag, "[TOOL_CALLS][");
  check(
      cfg,
      R"j([TOOL_CALLS] [{"name": "get_time", "arguments": {"timezone": "CET"}}, {"name": "get_current_weather", "arguments": {"location": "Paris"}}])j",
      {"",
       "",
       {{"get_time", R"j({"timezone": "CET"})j"},
        {"get_current_weather", R"j({"location": "Paris"})j"}}});
  check(cfg, R"j([TOOL_CALLS]get_time[ARGS]{"timezone": "CET"})j",
        {"", "", {{"get_time", R"j({"timezone": "CET"})j"}}});
}

// Ollama's named command-r template: the tag keeps its newline ("Action: ```json\n[").
TEST(OutputParserTemplates, CommandRNamedTemplate) {
  auto text = named_template_text("command-r");
  ASSERT_TRUE(text.has_value());
  ParserConfig cfg = config_for(*text, Think{});
  check(cfg,
        "Action: ```json\n[\n    {\n        \"tool_name\": \"get_time\",\n"
        "        \"parameters\": {\"timezone\": \"CET\"}\n    }\n]\n```",
        {"", "", {{"get_time", R"j({"timezone": "CET"})j"}}});
}

}  // namespace
}  // namespace vkllm::prompt::testing
