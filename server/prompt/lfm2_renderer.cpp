// Ollama's lfm2 and lfm2-thinking renderers (model/renderers/lfm2.go), written from their
// behaviour: ChatML turns; the first system message joined by the tools, listed as
// "List of tools: <|tool_list_start|>[...]<|tool_list_end|>" in Python's json.dumps spacing;
// past calls as <|tool_call_start|>[name(key=json, ...)]<|tool_call_end|> before the answer;
// tool results wrapped in <|tool_response_start|>...<|tool_response_end|>; reasoning dropped from
// every answer but the last unless thinking is kept (lfm2-thinking with think on, which also
// writes a past answer's thinking back as <think>...</think>); a trailing assistant message is
// continued rather than closed.
#include <algorithm>
#include <string>
#include <vector>

#include "server/prompt/builtin_renderers.h"
#include "server/prompt/go_space.h"
#include "server/prompt/go_value.h"
#include "server/prompt/template_data.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kLfm2ThinkOpen = "<think>";
constexpr std::string_view kLfm2ThinkClose = "</think>";
constexpr std::string_view kLfm2CallStart = "<|tool_call_start|>";
constexpr std::string_view kLfm2CallEnd = "<|tool_call_end|>";
constexpr std::string_view kLfm2ResponseStart = "<|tool_response_start|>";
constexpr std::string_view kLfm2ResponseEnd = "<|tool_response_end|>";

// Go's encoding/json with SetEscapeHTML(false) (the \u003c, \u003e and \u0026 escapes undone),
// then a space after each ':' and ',' outside strings unless whitespace follows: HF's tojson.
std::string lfm2_json(const std::string& go_json_text) {
  std::string plain;
  plain.reserve(go_json_text.size());
  bool in_string = false;
  for (size_t i = 0; i < go_json_text.size(); ++i) {
    const char c = go_json_text[i];
    if (in_string && c == '\\' && i + 1 < go_json_text.size()) {
      const std::string_view esc = std::string_view(go_json_text).substr(i, 6);
      if (esc == "\\u003c" || esc == "\\u003e" || esc == "\\u0026") {
        plain += esc == "\\u003c" ? '<' : esc == "\\u003e" ? '>' : '&';
        i += 5;
      } else {
        plain += c;
        plain += go_json_text[++i];
      }
      continue;
    }
    if (c == '"') in_string = !in_string;
    plain += c;
  }
  std::string out;
  out.reserve(plain.size() + plain.size() / 8);
  in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < plain.size(); ++i) {
    const char c = plain[i];
    out += c;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if ((c == ':' || c == ',') && i + 1 < plain.size()) {
      const char next = plain[i + 1];
      if (next != ' ' && next != '\n' && next != '\r' && next != '\t') out += ' ';
    }
  }
  return out;
}

std::string lfm2_value_json(const nlohmann::ordered_json& v) {
  return lfm2_json(go_json(json_to_value(v)));
}

std::string lfm2_tool_calls(const std::vector<ToolCall>& calls) {
  std::string out = std::string(kLfm2CallStart) + "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += ",";
    out += calls[i].name + "(";
    std::vector<std::string> keys;
    const auto& args = calls[i].arguments;
    if (args.is_object())
      for (auto it = args.begin(); it != args.end(); ++it) keys.push_back(it.key());
    std::sort(keys.begin(), keys.end());
    for (size_t k = 0; k < keys.size(); ++k)
      out += (k ? "," : "") + keys[k] + "=" + lfm2_value_json(args.at(keys[k]));
    out += ")";
  }
  return out + "]" + std::string(kLfm2CallEnd);
}

bool lfm2_contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

std::string render_lfm2(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                        const Think& think, bool thinking_variant) {
  std::string out;
  std::string system;
  size_t begin = 0;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    begin = 1;
  }
  if (tools.is_array() && !tools.empty()) {
    if (!system.empty()) system += "\n";
    system += "List of tools: <|tool_list_start|>[";
    const Value list = tools_value(tools);
    for (size_t i = 0; i < list.as_list().size(); ++i) {
      const Value& tool = list.as_list()[i];
      // A tool with a named function is listed as the function schema alone.
      const Value* fn = tool.field("Function");
      const bool named = fn && !fn->field("Name")->as_string().empty();
      if (i > 0) system += ", ";
      system += lfm2_json(go_json(named ? *fn : tool));
    }
    system += "]<|tool_list_end|>";
  }
  if (!system.empty()) out += "<|im_start|>system\n" + system + "<|im_end|>\n";

  const bool keep_past_thinking = thinking_variant && think.set && think.enabled;
  size_t last_assistant = SIZE_MAX;
  for (size_t i = messages.size(); i-- > begin;)
    if (messages[i].role == "assistant") {
      last_assistant = i;
      break;
    }
  size_t images = 0;
  for (size_t i = 0; i < begin; ++i) images += messages[i].images.size();

  for (size_t i = begin; i < messages.size(); ++i) {
    const Message& m = messages[i];
    const bool prefill = i + 1 == messages.size() && m.role == "assistant";
    out += "<|im_start|>" + m.role + "\n";
    std::string content = content_with_image_tags(m.content, m.images.size(), images);
    if (m.role == "assistant" && !m.tool_calls.empty() && !lfm2_contains(content, kLfm2CallStart)) {
      const std::string calls = lfm2_tool_calls(m.tool_calls);
      content = go_trim_space(content).empty() ? calls + content : calls + "\n" + content;
    }
    // The thinking goes back in the model's own form, before calls and answer.
    if (thinking_variant && m.role == "assistant" && !m.thinking.empty() &&
        !lfm2_contains(content, kLfm2ThinkClose)) {
      content = std::string(kLfm2ThinkOpen) + m.thinking + std::string(kLfm2ThinkClose) + content;
    }
    if (m.role == "assistant" && !keep_past_thinking && i != last_assistant) {
      if (const size_t at = content.rfind(kLfm2ThinkClose); at != std::string::npos)
        content = go_trim_space(std::string_view(content).substr(at + kLfm2ThinkClose.size()));
    }
    if (m.role == "tool" && !lfm2_contains(content, kLfm2ResponseStart))
      content = std::string(kLfm2ResponseStart) + content + std::string(kLfm2ResponseEnd);
    out += content;
    if (!prefill) out += "<|im_end|>\n";
  }
  if (messages.empty() || messages.back().role != "assistant") out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace vkllm::prompt
