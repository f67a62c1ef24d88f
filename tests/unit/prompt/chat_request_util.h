// Shared by the built-in renderer tests: the fields of an /api/chat body their golden cases use,
// as the PromptBuilder input (the API layer's own conversion is tested with the server; `vkllm
// debug render` runs such bodies through it in qwen_renderers.test.sh).
#pragma once

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt::testing {

inline ChatInput chat_input(const nlohmann::ordered_json& body) {
  using ojson = nlohmann::ordered_json;
  ChatInput in;
  for (const auto& m : body["messages"]) {
    Message msg;
    msg.role = m.value("role", "");
    msg.content = m.value("content", "");
    msg.thinking = m.value("thinking", "");
    msg.tool_name = m.value("tool_name", "");
    msg.tool_call_id = m.value("tool_call_id", "");
    for (const auto& c : m.value("tool_calls", ojson::array())) {
      ToolCall call;
      call.id = c.value("id", "");
      call.name = c["function"].value("name", "");
      call.arguments = c["function"].value("arguments", ojson::object());
      msg.tool_calls.push_back(call);
    }
    for (const auto& img : m.value("images", ojson::array())) msg.images.push_back(img.dump());
    in.messages.push_back(msg);
  }
  in.tools = body.value("tools", ojson());
  if (body.contains("think")) {
    in.think.set = true;
    in.think.enabled = body["think"].get<bool>();
    in.think.level = in.think.enabled ? "medium" : "";
  }
  return in;
}

}  // namespace vkllm::prompt::testing
