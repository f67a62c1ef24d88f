// Ollama's qwen3.5 renderer (model/renderers/qwen35.go, default variant), written from its
// behaviour: ChatML turns, tools as JSON lines with a space after every ':' and ',' in a
// <tools> block of the system turn with the XML call instructions, past calls as
// <tool_call><function=NAME><parameter=P>, consecutive tool results in one user turn, thinking
// shown only for assistant turns after the last real user query, and the model's turn opened
// with "<think>\n" (or an empty think block when think is false).
#include <string>

#include "server/prompt/builtin_renderers.h"
#include "server/prompt/go_space.h"
#include "server/prompt/qwen_chat_format.h"
#include "server/prompt/template_data.h"

namespace vkllm::prompt {

namespace {

using qwen::kImEnd;
using qwen::kImStart;
using qwen::kThinkClose;
using qwen::kThinkOpen;

constexpr std::string_view kQwen35ToolsIntro =
    "# Tools\n\nYou have access to the following functions:\n\n<tools>";

// Go JSON with a space after each ':' and ',' outside strings (as Python's json.dumps writes
// them, which the model's template uses).
std::string with_json_spaces(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 8);
  bool in_string = false, escaped = false;
  for (char c : json) {
    out += c;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == ':' || c == ',') {
      out += ' ';
    }
  }
  return out;
}

// A message's text with its images as [img-N] tags (`next` counts images across messages).
std::string content_with_images(const Message& m, size_t& next) {
  return content_with_image_tags(m.content, m.images.size(), next);
}

bool is_tool_response(const std::string& content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// A past assistant turn's reasoning and answer: the message's thinking when the turn shows it,
// else reasoning written inline before </think> in its content (taken out of the answer).
std::pair<std::string, std::string> split_reasoning(std::string content, const Message& m,
                                                    bool show_thinking) {
  if (show_thinking && !m.thinking.empty()) return {go_trim_space(m.thinking), content};
  std::string reasoning;
  if (const size_t close = content.find(kThinkClose); close != std::string::npos) {
    const std::string before = content.substr(0, close);
    const size_t open = before.rfind(kThinkOpen);
    reasoning = open == std::string::npos ? before : before.substr(open + kThinkOpen.size());
    size_t rest = close + kThinkClose.size();
    while (rest < content.size() && content[rest] == '\n') ++rest;
    content = content.substr(rest);
  }
  return {go_trim_space(reasoning), content};
}

void write_tool_calls(std::string& out, const Message& m, const std::string& content) {
  for (size_t j = 0; j < m.tool_calls.size(); ++j) {
    if (j > 0) {
      out += "\n";
    } else if (!go_trim_space(content).empty()) {
      out += "\n\n";
    }
    out += "<tool_call>\n<function=" + m.tool_calls[j].name + ">\n";
    const auto& args = m.tool_calls[j].arguments;
    if (args.is_object()) {
      for (auto it = args.begin(); it != args.end(); ++it) {
        out +=
            "<parameter=" + it.key() + ">\n" + qwen_argument_text(it.value()) + "\n</parameter>\n";
      }
    }
    out += "</function>\n</tool_call>";
  }
}

}  // namespace

std::string render_qwen35(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                          const Think& think) {
  const bool thinking = think.set ? think.enabled : true;
  std::string out;
  const bool leading_system = !messages.empty() && messages.front().role == "system";
  auto system_text = [&] {
    size_t images = 0;
    return go_trim_space(content_with_images(messages.front(), images));
  };
  if (tools.is_array() && !tools.empty()) {
    out += std::string(kImStart) + "system\n" + std::string(kQwen35ToolsIntro);
    const Value list = tools_value(tools);
    for (const auto& tool : list.as_list()) out += "\n" + with_json_spaces(go_json(tool));
    out += "\n</tools>\n\n";
    out += qwen::kToolCallInstructions;
    if (leading_system) {
      const std::string sys = system_text();
      if (!sys.empty()) out += "\n\n" + sys;
    }
    out += std::string(kImEnd) + "\n";
  } else if (leading_system) {
    out += std::string(kImStart) + "system\n" + system_text() + std::string(kImEnd) + "\n";
  }

  // The last user message that is a real query (not tool results sent as a user turn): only
  // assistant turns after it show their thinking.
  size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role != "user") continue;
    size_t images = 0;
    if (!is_tool_response(go_trim_space(content_with_images(messages[i], images)))) {
      last_query = i;
      break;
    }
  }

  size_t images = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    std::string content = go_trim_space(content_with_images(m, images));
    const bool last = i + 1 == messages.size();
    const bool prefill = last && m.role == "assistant";
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += std::string(kImStart) + m.role + "\n" + content + std::string(kImEnd) + "\n";
    } else if (m.role == "assistant") {
      const bool show_thinking = thinking && i > last_query;
      auto [reasoning, answer] = split_reasoning(std::move(content), m, show_thinking);
      out += std::string(kImStart) + "assistant\n";
      if (show_thinking) out += "<think>\n" + reasoning + "\n</think>\n\n";
      out += answer;
      write_tool_calls(out, m, answer);
      if (!prefill) out += std::string(kImEnd) + "\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += std::string(kImStart) + "user";
      out += "\n<tool_response>\n" + content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") out += std::string(kImEnd) + "\n";
    }
    if (last && !prefill) {
      out += std::string(kImStart) + "assistant\n";
      out += thinking ? "<think>\n" : "<think>\n\n</think>\n\n";
    }
  }
  return out;
}

}  // namespace vkllm::prompt
