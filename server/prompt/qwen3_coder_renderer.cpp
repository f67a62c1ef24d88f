// Ollama's qwen3-coder renderer (model/renderers/qwen3coder.go), written from its behaviour:
// ChatML turns; the first system message (or, with tools, a default one) followed by the tools as
// XML (<function><name>, <description>, <parameters> with one <parameter> per property and any
// other schema keys as <key>value</key>) and the XML call instructions; past calls as
// <tool_call><function=NAME><parameter=P>; consecutive tool results in one user turn.
#include <algorithm>
#include <string>

#include "server/prompt/builtin_renderers.h"
#include "server/prompt/qwen_chat_format.h"
#include "server/prompt/template_data.h"

namespace vkllm::prompt {

using ojson = nlohmann::ordered_json;

namespace {

using qwen::kImEnd;
using qwen::kImStart;
constexpr std::string_view kCoderDefaultSystem =
    "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks.";

// Schema keys the renderer does not write itself, as <key>value</key> lines. `go_json_text` is
// the object as Ollama's Go types encode it (unknown keys dropped); Ollama ranges over a Go map
// (no fixed order): vkllm writes the keys sorted.
std::string coder_extra_keys(const std::string& go_json_text,
                             std::initializer_list<std::string_view> handled) {
  const auto obj = nlohmann::json::parse(go_json_text, nullptr, false);
  if (!obj.is_object()) return {};
  std::string out;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(handled.begin(), handled.end(), it.key()) != handled.end()) continue;
    if (it->is_null()) continue;
    const Value v = json_to_value(ojson(*it));
    const std::string text = it->is_object() || it->is_array() ? go_json(v) : go_sprint_value(v);
    out += "\n<" + it.key() + ">" + text + "</" + it.key() + ">";
  }
  return out;
}

// A property's type: the one name, or the list as compact JSON.
std::string property_type_text(const ojson& type) {
  if (type.is_string()) return type.get<std::string>();
  return go_json(json_to_value(type));
}

void write_coder_tool(std::string& out, const Value& tool) {
  const Value* fn = tool.field("Function");
  if (fn == nullptr) return;
  out += "\n<function>\n<name>" + fn->field("Name")->as_string() + "</name>";
  const std::string& description = fn->field("Description")->as_string();
  if (!description.empty()) out += "\n<description>" + description + "</description>";
  out += "\n<parameters>";
  const Value* params = fn->field("Parameters");
  const auto props = ojson::parse(go_json(*params->field("Properties")), nullptr, false);
  if (props.is_object()) {
    for (auto it = props.begin(); it != props.end(); ++it) {
      out += "\n<parameter>\n<name>" + it.key() + "</name>";
      const ojson& p = *it;
      if (p.contains("type")) out += "\n<type>" + property_type_text(p["type"]) + "</type>";
      if (p.contains("description") && p["description"].is_string())
        out += "\n<description>" + p["description"].get<std::string>() + "</description>";
      out += coder_extra_keys(p.dump(), {"type", "description"});
      out += "\n</parameter>";
    }
  }
  out += coder_extra_keys(go_json(*params), {"type", "properties"});
  out += "\n</parameters>\n</function>";
}

}  // namespace

std::string render_qwen3_coder(const std::vector<Message>& messages, const ojson& tools) {
  std::string system;
  std::vector<const Message*> turns;
  for (const auto& m : messages) {
    if (m.role != "system") {
      turns.push_back(&m);
    } else if (system.empty()) {
      system = m.content;  // the first system message with text wins
    }
  }
  const bool has_tools = tools.is_array() && !tools.empty();
  std::string out;
  if (!system.empty() || has_tools) {
    out += std::string(kImStart) + "system\n" +
           (system.empty() ? std::string(kCoderDefaultSystem) : system);
    if (has_tools) {
      out += "\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>";
      const Value list = tools_value(tools);
      for (const auto& tool : list.as_list()) write_coder_tool(out, tool);
      out += "\n</tools>\n\n";
      out += qwen::kToolCallInstructions;
    }
    out += std::string(kImEnd) + "\n";
  }
  for (size_t i = 0; i < turns.size(); ++i) {
    const Message& m = *turns[i];
    const bool last = i + 1 == turns.size();
    const bool prefill = last && m.role == "assistant";
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      out += std::string(kImStart) + "assistant\n";
      if (!m.content.empty()) out += m.content + "\n";
      for (const auto& call : m.tool_calls) {
        out += "\n<tool_call>\n<function=" + call.name + ">";
        if (call.arguments.is_object()) {
          for (auto it = call.arguments.begin(); it != call.arguments.end(); ++it)
            out += "\n<parameter=" + it.key() + ">\n" + qwen_argument_text(it.value()) +
                   "\n</parameter>";
        }
        out += "\n</function>\n</tool_call>";
      }
      out += std::string(kImEnd) + "\n";  // closed even as the last message
    } else if (m.role == "assistant") {
      out += std::string(kImStart) + "assistant\n" + m.content;
      if (!prefill) out += std::string(kImEnd) + "\n";
    } else if (m.role == "tool") {
      if (i == 0 || turns[i - 1]->role != "tool") out += std::string(kImStart) + "user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || turns[i + 1]->role != "tool") out += std::string(kImEnd) + "\n";
    } else {
      out += std::string(kImStart) + m.role + "\n" + m.content + std::string(kImEnd) + "\n";
    }
    if (last && !prefill) out += std::string(kImStart) + "assistant\n";
  }
  return out;
}

}  // namespace vkllm::prompt
