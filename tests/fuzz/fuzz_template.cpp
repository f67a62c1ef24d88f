// The Go template engine on arbitrary text: parsing may fail only with TemplateError; a template
// that parses executes (in messages and legacy shape, with Ollama's tree operations and the
// parser-config inspection) within small step and output limits, failing only with TemplateError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/prompt/go_template.h"
#include "server/prompt/template_data.h"
#include "server/prompt/template_inspect.h"

using namespace vkllm::prompt;

namespace {

Value sample_data() {
  Message user{"user", "Hello <b>&</b>", "", {"img"}, {}, "", ""};
  Message assistant{"assistant", "", "thinking…", {}, {}, "", ""};
  assistant.tool_calls.push_back(
      ToolCall{"call_1", 0, "get", nlohmann::ordered_json::parse(R"({"b":[1,2.5,null],"a":"x"})")});
  Message tool{"tool", "42", "", {}, {}, "get", "call_1"};
  auto tools = nlohmann::ordered_json::parse(
      R"([{"type":"function","function":{"name":"get","description":"d","parameters":{"type":"object",
      "required":["a"],"properties":{"a":{"type":["string","null"],"enum":["x"]},"b":{"anyOf":[{"type":"integer"}]}}}}}])");
  return Value::map({{"System", Value::string("sys")},
                     {"Messages", Value::list({message_value(user), message_value(assistant),
                                               message_value(tool)})},
                     {"Tools", tools_value(tools)},
                     {"Prompt", Value::string("p")},
                     {"Response", Value::string("")},
                     {"Think", Value::boolean(true)},
                     {"ThinkLevel", Value::string("high")},
                     {"N", Value::integer(3)},
                     {"F", Value::floating(-1.5e-7)},
                     {"Nil", Value()}});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Value root = sample_data();
  const std::string text(reinterpret_cast<const char*>(data), size);
  ExecLimits limits;
  limits.max_steps = 20000;
  limits.max_output = 1 << 16;
  limits.max_depth = 20;
  try {
    GoTemplate t = GoTemplate::parse(text);
    std::string open, close;
    infer_thinking_tags(t, open, close);
    (void)tool_call_tag(t);
    (void)t.identifiers();
    try {
      (void)t.execute(root, limits);
    } catch (const TemplateError&) {
    }
    try {
      (void)t.with_response_appended().cut_after_response().execute(root, limits);
    } catch (const TemplateError&) {
    }
  } catch (const TemplateError&) {
  }
  return 0;
}
