#include "server/prompt/harmony_names.h"

namespace vkllm::prompt {

namespace {

bool is_harmony_builtin(std::string_view name) {
  return name == "browser.search" || name == "browser.open" || name == "browser.find" ||
         name == "python";
}

// Code points in the blocks of symbols and emoji (arrows, technical symbols, enclosed
// alphanumerics such as circled letters, dingbats, pictographs): never letters or digits.
bool is_symbol_block(char32_t cp) {
  return (cp >= 0x2190 && cp <= 0x27BF) || (cp >= 0x2900 && cp <= 0x2BFF) ||
         (cp >= 0x1F000 && cp <= 0x1FAFF) || (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0x200D;
}

// Ollama keeps letters and digits (unicode.IsLetter/IsDigit), '_' and '$'; ' ', '-' and '.'
// become '_'. Beyond ASCII, characters are kept unless they are in a symbol block (no Unicode
// tables here: server/prompt depends on nothing else).
std::string harmony_identifier(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x80) {
      if (c == ' ' || c == '-' || c == '.') {
        out += '_';
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '$') {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    char32_t cp = n == 1 ? 0xFFFD : c & (0x7F >> n);
    bool valid = n > 1 && i + n <= name.size();
    for (size_t k = 1; valid && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(name[i + k]);
      valid = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (valid && !is_symbol_block(cp)) out.append(name.substr(i, n));
    i += valid ? n : 1;
  }
  if (out.empty()) return "unnamed";
  if (out[0] >= '0' && out[0] <= '9') out.insert(out.begin(), '_');
  return out;
}

const std::string* harmony_tool_name(const nlohmann::ordered_json& tool) {
  if (!tool.is_object()) return nullptr;
  auto f = tool.find("function");
  if (f == tool.end() || !f->is_object()) return nullptr;
  auto n = f->find("name");
  if (n == f->end() || !n->is_string()) return nullptr;
  return n->get_ptr<const std::string*>();
}

}  // namespace

HarmonyFunctionNames::HarmonyFunctionNames(const std::vector<std::string>& tool_names) {
  for (const auto& name : tool_names)
    if (!name.empty()) add(name);
}

std::string HarmonyFunctionNames::add(const std::string& user_name) {
  std::string name = user_name;
  if (!is_harmony_builtin(user_name)) {
    const std::string base = harmony_identifier(user_name);
    name = base;
    for (int n = 2; to_user_.contains(name); ++n) name = base + "_" + std::to_string(n);
  }
  to_user_[name] = user_name;
  return name;
}

std::string HarmonyFunctionNames::user_name(const std::string& harmony_name) const {
  auto it = to_user_.find(harmony_name);
  return it == to_user_.end() ? harmony_name : it->second;
}

nlohmann::ordered_json HarmonyFunctionNames::renamed_tools(const nlohmann::ordered_json& tools) {
  if (!tools.is_array()) return tools;
  HarmonyFunctionNames names;
  nlohmann::ordered_json out = tools;
  for (auto& t : out) {
    if (const std::string* name = harmony_tool_name(t); name && !name->empty()) {
      t["function"]["name"] = names.add(*name);
    }
  }
  return out;
}

}  // namespace vkllm::prompt
