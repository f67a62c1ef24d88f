// gpt-oss's Harmony prompt, byte for byte as Ollama builds it. Ollama renders gpt-oss through the
// Go template of its library model (the same text as `gptossDefaultTemplate` in Ollama's
// x/create/client/create.go), with the request's tools renamed by its harmony parser
// (harmony/harmonyparser.go, FunctionNameMap) and think "max" sent as "high" (server/routes.go,
// ChatHandler). Each golden below is that template's output for the conversation, worked out
// from the template's text ({DATE} is currentDate: today, YYYY-MM-DD). vkllm renders it with its
// own gpt-oss template (server/prompt/templates/gpt-oss.gotmpl), selected for gpt-oss GGUFs, for
// GGUF chat templates that write Harmony, and by RENDERER harmony.
#include <gtest/gtest.h>

#include <ctime>

#include "server/prompt/prompt.h"

using namespace vkllm::prompt;

namespace {

std::string today() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string with_date(std::string s) {
  const std::string key = "{DATE}";
  if (size_t at = s.find(key); at != std::string::npos) s.replace(at, key.size(), today());
  return s;
}

ModelPrompt gpt_oss() {
  ModelPrompt m;
  m.architecture = "gpt-oss";
  return m;
}

Message harmony_msg(std::string role, std::string content, std::string thinking = "") {
  return Message{std::move(role), std::move(content), std::move(thinking), {}, {}, "", ""};
}

Message call(std::string thinking, std::string name, nlohmann::ordered_json args) {
  Message m = harmony_msg("assistant", "", std::move(thinking));
  m.tool_calls.push_back({"", 0, std::move(name), std::move(args)});
  return m;
}

Message result(std::string name, std::string content) {
  Message m = harmony_msg("tool", std::move(content));
  m.tool_name = std::move(name);
  return m;
}

Think think(std::string level) {
  return Think{true, !level.empty(), std::move(level)};
}

std::string render(const ChatInput& in, ModelPrompt m = gpt_oss()) {
  PromptBuilder b(std::move(m));
  return b.render_chat(in, UINT32_MAX, {}).text;
}

const std::string kHead =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    "Current date: {DATE}\n\n";
const std::string kChannels =
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.";
const std::string kCallsLine =
    "\nCalls to these tools must go to the commentary channel: 'functions'.";

// Tools with nested JSON-schema parameters: properties are listed in name order (Go ranges
// over a map), each as its TypeScript type (enums and nested objects keep only their type;
// anyOf and type lists become unions); descriptions become comments.
nlohmann::ordered_json harmony_weather_tools() {
  return nlohmann::ordered_json::parse(R"j([
    {"type": "function", "function": {"name": "get-weather", "description": "Weather of a city",
      "parameters": {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": ["integer", "null"], "description": "Days ahead"},
        "hours": {"type": "array", "items": {"type": "integer"}},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
        "exact": {"type": "boolean"},
        "id": {"anyOf": [{"type": "string"}, {"type": "number"}]}}}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}])j");
}

const std::string kWeatherDeveloper =
    "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n"
    "// Weather of a city\n"
    "type get_weather = (_: {\n"
    "  // City name\n"
    "  city: string,\n"
    "  // Days ahead\n"
    "  days: number | null,\n"
    "  exact: boolean,\n"
    "  hours: any[],\n"
    "  id: string | number,\n"
    "  unit: string,\n"
    "  where: Record<string, any>,\n"
    "}) => any;\n\n"
    "type now = () => any;\n\n"
    "} // namespace functions";

}  // namespace

TEST(HarmonyTemplate, SelectedForGptOssAndRendererHarmony) {
  PromptBuilder arch(gpt_oss());
  EXPECT_EQ(arch.detected_template(), "gpt-oss");
  EXPECT_TRUE(arch.uses_harmony());
  EXPECT_TRUE(arch.capabilities().tools);
  EXPECT_TRUE(arch.capabilities().thinking);

  ModelPrompt ollama_name;  // Ollama's own converter writes "gptoss"
  ollama_name.architecture = "gptoss";
  EXPECT_TRUE(PromptBuilder(ollama_name).uses_harmony());

  // A GGUF's Jinja template that writes Harmony's tokens (as gpt-oss's does) is detected.
  EXPECT_EQ(detect_named_template("{{- '<|start|>assistant<|channel|>final<|message|>' + "
                                  "message.content + '<|end|>' }}")
                .value_or("<none>"),
            "gpt-oss");

  // RENDERER harmony on any model: the gpt-oss template wins over the TEMPLATE layer, and the
  // output is parsed as Harmony; PARSER harmony alone parses a template's Harmony output.
  ModelPrompt llama;
  llama.architecture = "llama";
  llama.template_text = "{{ .Prompt }}";
  EXPECT_FALSE(PromptBuilder(llama).uses_harmony());
  llama.renderer = "harmony";
  PromptBuilder forced(llama);
  EXPECT_TRUE(forced.uses_harmony());
  EXPECT_NE(forced.template_text().find("namespace functions"), std::string::npos);
  llama.renderer.clear();
  llama.parser = "harmony";
  EXPECT_TRUE(PromptBuilder(llama).uses_harmony());
  EXPECT_EQ(PromptBuilder(llama).template_text(), "{{ .Prompt }}");

  // Ollama's test: a gpt-oss model whose template does not write <|start|>/<|end|> is not
  // Harmony.
  ModelPrompt plain = gpt_oss();
  plain.template_text = "{{ .Prompt }}";
  EXPECT_FALSE(PromptBuilder(plain).uses_harmony());
}

TEST(HarmonyTemplate, PlainChatThinksAtMediumByDefault) {
  ChatInput in;
  in.messages = {harmony_msg("user", "Hello!")};
  EXPECT_EQ(render(in),
            with_date(kHead + "Reasoning: medium\n\n" + kChannels +
                      "<|end|><|start|>user<|message|>Hello!<|end|><|start|>assistant"));
}

TEST(HarmonyTemplate, ReasoningEffortFollowsThink) {
  const std::string tail =
      "\n\n" + kChannels + "<|end|><|start|>user<|message|>Hi<|end|>" + "<|start|>assistant";
  for (const auto& [level, line] :
       std::vector<std::pair<std::string, std::string>>{{"low", "Reasoning: low"},
                                                        {"medium", "Reasoning: medium"},
                                                        {"high", "Reasoning: high"},
                                                        {"max", "Reasoning: high"}}) {
    ChatInput in;
    in.messages = {harmony_msg("user", "Hi")};
    in.think = think(level);
    EXPECT_EQ(render(in), with_date(kHead + line + tail)) << level;
  }
  ChatInput off;  // think: false: no reasoning line at all
  off.messages = {harmony_msg("user", "Hi")};
  off.think = think("");
  EXPECT_EQ(render(off), with_date(kHead + kChannels +
                                   "<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant"));
}

TEST(HarmonyTemplate, SystemMessagesBecomeDeveloperInstructions) {
  // Every system message, joined by a blank line, becomes "# Instructions" in the developer
  // message; the system messages themselves are not rendered again.
  ChatInput in;
  in.messages = {harmony_msg("system", "You are terse."),
                 harmony_msg("system", "Answer in French."), harmony_msg("user", "Hi")};
  EXPECT_EQ(render(in), with_date(kHead + "Reasoning: medium\n\n" + kChannels +
                                  "<|end|><|start|>developer<|message|>\n\n# Instructions\n\n"
                                  "You are terse.\n\nAnswer in French.<|end|>"
                                  "<|start|>user<|message|>Hi<|end|><|start|>assistant"));
}

TEST(HarmonyTemplate, ToolsAreATypeScriptNamespace) {
  ChatInput in;
  in.messages = {harmony_msg("system", "Be brief."), harmony_msg("user", "Weather in Paris?")};
  in.tools = harmony_weather_tools();
  in.think = think("low");
  EXPECT_EQ(render(in), with_date(kHead + "Reasoning: low\n\n" + kChannels + kCallsLine +
                                  "<|end|>" + kWeatherDeveloper +
                                  "\n\n# Instructions\n\nBe brief.<|end|>"
                                  "<|start|>user<|message|>Weather in Paris?<|end|>"
                                  "<|start|>assistant"));
}

TEST(HarmonyTemplate, ToolCallLoopWithThinkingOfTheTurnInProgress) {
  // Thinking of earlier turns is dropped; after the last user message it is kept. Calls go to
  // the commentary channel with their arguments as JSON (keys sorted, as Go prints a map),
  // results come back from functions.NAME; built-in tools (python, browser.*) use the analysis
  // channel and their own names.
  ChatInput in;
  in.messages = {harmony_msg("user", "Hi"),
                 harmony_msg("assistant", "Hello!", "Greet back."),
                 harmony_msg("user", "Weather in Paris?"),
                 call("Need the weather.", "get_weather", {{"unit", "celsius"}, {"city", "Paris"}}),
                 result("get_weather", "{\"temp\": 18}"),
                 call("Convert.", "python", {{"code", "18*9/5+32"}}),
                 result("python", "64.4")};
  in.tools = harmony_weather_tools();
  in.think = think("high");
  EXPECT_EQ(
      render(in),
      with_date(kHead + "Reasoning: high\n\n" + kChannels + kCallsLine + "<|end|>" +
                kWeatherDeveloper + "<|end|>" +
                "<|start|>user<|message|>Hi<|end|>"
                "<|start|>assistant<|channel|>final<|message|>Hello!<|end|>"
                "<|start|>user<|message|>Weather in Paris?<|end|>"
                "<|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|>"
                "<|start|>assistant<|channel|>commentary to=functions.get_weather "
                "<|constrain|>json<|message|>{\"city\":\"Paris\",\"unit\":\"celsius\"}<|call|>"
                "<|start|>functions.get_weather to=assistant<|message|>{\"temp\": 18}<|end|>"
                "<|start|>assistant<|channel|>analysis<|message|>Convert.<|end|>"
                "<|start|>assistant<|channel|>analysis to=python <|constrain|>json<|message|>"
                "{\"code\":\"18*9/5+32\"}<|call|>"
                "<|start|>python to=assistant<|message|>64.4<|end|>"
                "<|start|>assistant"));
}

TEST(HarmonyTemplate, BuiltInBrowserToolsGoToTheSystemMessage) {
  ChatInput in;
  in.messages = {harmony_msg("user", "Find it")};
  in.tools = nlohmann::ordered_json::parse(
      R"j([{"type": "function", "function": {"name": "browser.find", "parameters": {}}}])j");
  EXPECT_EQ(
      render(in),
      with_date(kHead +
                "Reasoning: medium\n\n# Tools\n\n## browser\n\n"
                "// Tool for browsing.\n"
                "// The cursor appears in brackets before each browsing display, "
                "like [cursor].\n"
                "// Cite information from the tool using the line-citation format "
                "shown by the browser output.\n"
                "// Do not quote more than 10 words directly from the tool output.\n"
                "// sources=web (default: web)\n"
                "namespace browser {\n\n"
                "// Finds exact matches of pattern in the current page, or the page "
                "given by cursor.\n"
                "type find = (_: {\npattern: string,\ncursor?: number, // default: "
                "-1\n}) => any;\n\n} // namespace browser\n\n" +
                kChannels + "<|end|><|start|>user<|message|>Find it<|end|><|start|>assistant"));
}

TEST(HarmonyTemplate, ALastAssistantMessageIsContinued) {
  // Prefill: the last assistant message stays open (no <|end|>, no new <|start|>assistant).
  ChatInput content;
  content.messages = {harmony_msg("user", "Count"), harmony_msg("assistant", "1, 2,", "Counting.")};
  EXPECT_EQ(render(content),
            with_date(kHead + "Reasoning: medium\n\n" + kChannels +
                      "<|end|><|start|>user<|message|>Count<|end|>"
                      "<|start|>assistant<|channel|>analysis<|message|>Counting.<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>1, 2,"));
  ChatInput thinking;
  thinking.messages = {harmony_msg("user", "Count"), harmony_msg("assistant", "", "Let me")};
  EXPECT_EQ(render(thinking), with_date(kHead + "Reasoning: medium\n\n" + kChannels +
                                        "<|end|><|start|>user<|message|>Count<|end|>"
                                        "<|start|>assistant<|channel|>analysis<|message|>Let me"));
}
