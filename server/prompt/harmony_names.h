// Harmony's function names: gpt-oss sees each tool as a TypeScript function in
// `namespace functions`, so a tool name that is not a valid identifier ("get-weather",
// "my tool") is renamed for the prompt and mapped back when the model calls it, as Ollama's
// harmony FunctionNameMap does: ' ', '-' and '.' become '_', other characters that are not
// letters, digits, '_' or '$' are dropped (beyond ASCII: symbols and emoji), a leading digit gets a
// '_', an empty name becomes "unnamed", and a name already taken gets "_2", "_3"... The built-in
// tools (browser.search, browser.open, browser.find, python) keep their names.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkllm::prompt {

class HarmonyFunctionNames {
 public:
  HarmonyFunctionNames() = default;
  // Registers the names of a request's tools, in order (empty names are not renamed).
  explicit HarmonyFunctionNames(const std::vector<std::string>& tool_names);

  // Registers a user's function name and returns its Harmony name.
  std::string add(const std::string& user_name);
  // The user's name for a Harmony name; the name itself when it was never registered.
  std::string user_name(const std::string& harmony_name) const;

  // `tools` with each function renamed as add() renames it (what the prompt shows).
  static nlohmann::ordered_json renamed_tools(const nlohmann::ordered_json& tools);

 private:
  std::unordered_map<std::string, std::string> to_user_;
};

}  // namespace vkllm::prompt
