// Llama 4: a GGUF chat template with Llama 4's header and end-of-turn tokens (none is within reach
// of Ollama's index) is detected as llama4-instruct, which renders a conversation as llama.cpp's
// built-in llama4 chat format does (llama-chat.cpp: "<|header_start|>ROLE<|header_end|>\n\n"
// CONTENT "<|eot|>" per message, then the assistant's header), and stops at the end of a turn;
// with tools it writes them, past calls and results as Ollama's llama4 library template does.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "server/prompt/output_parser.h"
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

namespace {

PromptBuilder llama4_builder() {
  ModelPrompt mp;
  mp.gguf_chat_template = kLlama4Jinja;
  mp.architecture = "llama4";
  return PromptBuilder(mp);
}

nlohmann::ordered_json weather_tool() {
  return nlohmann::ordered_json::parse(R"([{"type":"function","function":{"name":"get_weather",
    "description":"Weather of a city","parameters":{"type":"object","required":["city"],
    "properties":{"city":{"type":"string"}}}}}])");
}

}  // namespace

// Tools as Ollama's llama4 library template writes them: Meta's function-calling instructions and
// the tools as a JSON list in the system turn, past calls as [{"name": ...,"parameters": ...}],
// results in an ipython turn; calls in that form parse into tool_calls.
TEST(Llama4Template, ToolsPastCallsAndResults) {
  PromptBuilder b = llama4_builder();
  EXPECT_TRUE(b.capabilities().tools);
  ChatInput in;
  in.tools = weather_tool();
  in.messages.push_back({"system", "Be brief.", "", {}, {}, "", ""});
  in.messages.push_back({"user", "Weather in Paris?", "", {}, {}, "", ""});
  Message call{"assistant", "", "", {}, {}, "", ""};
  call.tool_calls.push_back({"", 0, "get_weather", {{"city", "Paris"}}});
  in.messages.push_back(call);
  in.messages.push_back({"tool", "{\"temp\": 21}", "", {}, {}, "get_weather", ""});
  const std::string text = b.render_chat(in, 8192, {}).text;
  EXPECT_TRUE(
      text.starts_with("<|header_start|>system<|header_end|>\n\nBe brief.\n\nYou are a "
                       "helpful assistant and an expert in function composition."))
      << text;
  EXPECT_NE(text.find("Here is a list of functions in JSON format that you can invoke:\n[\n"
                      "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\""),
            std::string::npos)
      << text;
  const std::string tail =
      "]<|eot|><|header_start|>user<|header_end|>\n\nWeather in Paris?<|eot|>"
      "<|header_start|>assistant<|header_end|>\n\n"
      "[{\"name\": \"get_weather\",\"parameters\": {\"city\":\"Paris\"}}]<|eot|>"
      "<|header_start|>ipython<|header_end|>\n\n{\"temp\": 21}<|eot|>"
      "<|header_start|>assistant<|header_end|>\n\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;

  ParserConfig cfg = b.parser_config(in.tools, {}, text);
  EXPECT_EQ(cfg.tool_tag, "[");
  EXPECT_EQ(cfg.tool_arguments_key, "parameters");
  EXPECT_FALSE(cfg.tool_name_then_args);
  OutputParser parser(cfg);
  ParsedDelta out = parser.feed(R"([{"name": "get_weather","parameters": {"city": "Lyon"}}])");
  ParsedDelta rest = parser.finish();
  out.tool_calls.insert(out.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, nlohmann::ordered_json({{"city", "Lyon"}}));
  EXPECT_EQ(out.content + rest.content, "");
}
