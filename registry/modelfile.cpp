#include "registry/modelfile.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "registry/ascii_text.h"
#include "registry/errors.h"
#include "registry/parameters.h"

namespace vkllm::registry {
namespace {

constexpr const char* kInvalidCommand =
    "command must be one of \"from\", \"license\", \"template\", \"system\", \"adapter\", "
    "\"draft\", \"renderer\", \"parser\", \"parameter\", \"message\", or \"requires\"";

bool is_command(std::string_view name) {
  static constexpr std::string_view kNames[] = {"from",      "license", "template", "system",
                                                "adapter",   "draft",   "renderer", "parser",
                                                "parameter", "message", "requires"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool is_space(char c) {
  return c == ' ' || c == '\t';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

[[noreturn]] void fail(int line, const std::string& message) {
  throw RegistryError(ErrorKind::invalid_input, "(line " + std::to_string(line) + "): " + message);
}

// Strips """...""" or "..."; nullopt while the opening quote is not closed yet.
std::optional<std::string> unquote(std::string_view s) {
  if (s.starts_with("\"\"\"")) {
    if (s.size() >= 6 && s.ends_with("\"\"\"")) return std::string(s.substr(3, s.size() - 6));
    return std::nullopt;
  }
  if (s.starts_with('"')) {
    if (s.size() >= 2 && s.ends_with('"')) return std::string(s.substr(1, s.size() - 2));
    return std::nullopt;
  }
  return std::string(s);
}

// Decodes a UTF-16 text (after its BOM) to UTF-8; Ollama honours UTF-16 BOMs.
std::string utf16_to_utf8(std::string_view bytes, bool little_endian) {
  std::string out;
  auto unit = [&](size_t i) -> uint32_t {
    auto lo = static_cast<unsigned char>(bytes[i + (little_endian ? 0 : 1)]);
    auto hi = static_cast<unsigned char>(bytes[i + (little_endian ? 1 : 0)]);
    return lo | (hi << 8);
  };
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    uint32_t cp = unit(i);
    if (cp >= 0xd800 && cp < 0xdc00 && i + 3 < bytes.size()) {
      uint32_t low = unit(i + 2);
      if (low >= 0xdc00 && low < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        i += 2;
      }
    }
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  return out;
}

std::string normalise_text(std::string_view text) {
  std::string decoded;
  if (text.starts_with("\xef\xbb\xbf")) {
    decoded = std::string(text.substr(3));
  } else if (text.starts_with("\xff\xfe")) {
    decoded = utf16_to_utf8(text.substr(2), true);
  } else if (text.starts_with("\xfe\xff")) {
    decoded = utf16_to_utf8(text.substr(2), false);
  } else {
    decoded = std::string(text);
  }
  // CRLF counts as one line break; other control characters (except tab) are dropped, as
  // Ollama keeps only printable runes.
  std::string out;
  out.reserve(decoded.size());
  for (size_t i = 0; i < decoded.size(); ++i) {
    char c = decoded[i];
    if (c == '\r') {
      if (i + 1 < decoded.size() && decoded[i + 1] == '\n') continue;
      out.push_back('\n');
    } else if (c == '\n' || c == '\t' || static_cast<unsigned char>(c) >= 0x20) {
      if (c != 0x7f) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Modelfile Modelfile::parse(std::string_view raw_text) {
  const std::string text = normalise_text(raw_text);
  std::vector<std::string_view> lines;
  for (size_t start = 0;;) {
    size_t end = text.find('\n', start);
    lines.push_back(std::string_view(text).substr(
        start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }

  Modelfile file;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i + 1);
    std::string_view line = lines[i];
    size_t pos = 0;
    while (pos < line.size() && is_space(line[pos])) ++pos;
    if (pos == line.size() || line[pos] == '#') continue;

    size_t name_end = pos;
    while (name_end < line.size() && is_alpha(line[name_end])) ++name_end;
    if (name_end == line.size() || !is_space(line[name_end])) fail(line_number, kInvalidCommand);
    std::string name(line.substr(pos, name_end - pos));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!is_command(name)) fail(line_number, kInvalidCommand);
    pos = name_end;
    while (pos < line.size() && is_space(line[pos])) ++pos;

    ModelfileCommand command;
    command.name = name;
    command.line = line_number;
    if (name == "parameter" || name == "message") {
      size_t key_end = pos;
      auto key_char = [&](char c) {
        return name == "message" ? is_alpha(c)
                                 : (is_alpha(c) || (c >= '0' && c <= '9') || c == '_');
      };
      while (key_end < line.size() && key_char(line[key_end])) ++key_end;
      if (key_end == pos)
        fail(line_number, name == "message" ? "MESSAGE needs a role and a message"
                                            : "PARAMETER needs a name and a value");
      if (key_end == line.size() || !is_space(line[key_end])) {
        if (key_end == line.size())
          fail(line_number, std::string(name == "message" ? "MESSAGE" : "PARAMETER") + " " +
                                std::string(line.substr(pos)) + " has no value");
        fail(line_number, std::string("invalid character '") + line[key_end] + "' in " +
                              (name == "message" ? "message role" : "parameter name"));
      }
      command.key = std::string(line.substr(pos, key_end - pos));
      if (name == "message" && command.key != "system" && command.key != "user" &&
          command.key != "assistant")
        fail(line_number, "message role must be one of \"system\", \"user\", or \"assistant\"");
      pos = key_end;
    }

    // The value runs to the end of the line, or on over following lines while a quote that
    // opened it is not yet closed.
    std::string value(line.substr(pos));
    std::optional<std::string> unquoted = unquote(ascii_trim(value));
    while (!unquoted) {
      if (++i >= lines.size())
        fail(line_number, "unexpected EOF: the quoted value that starts here is never closed");
      value += '\n';
      value += lines[i];
      unquoted = unquote(ascii_trim(value));
    }
    command.value = std::move(*unquoted);
    file.commands.push_back(std::move(command));
  }
  if (std::none_of(file.commands.begin(), file.commands.end(),
                   [](const ModelfileCommand& c) { return c.name == "from"; }))
    throw RegistryError(ErrorKind::invalid_input, "no FROM line");
  return file;
}

std::string modelfile_quote(std::string_view value) {
  if (value.find('\n') != std::string_view::npos || value.starts_with(' ') ||
      value.ends_with(' ')) {
    std::string_view mark = value.find('"') != std::string_view::npos ? "\"\"\"" : "\"";
    std::string out;
    out.reserve(value.size() + 2 * mark.size());
    out.append(mark).append(value).append(mark);
    return out;
  }
  return std::string(value);
}

std::string Modelfile::to_string() const {
  std::string out;
  for (const auto& c : commands) {
    if (c.name == "from") {
      out += "FROM " + c.value;
    } else if (c.name == "parameter") {
      out += "PARAMETER " + c.key + " " + modelfile_quote(c.value);
    } else if (c.name == "message") {
      out += "MESSAGE " + c.key + " " + modelfile_quote(c.value);
    } else {
      std::string upper = c.name;
      std::transform(upper.begin(), upper.end(), upper.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
      out += upper + " " + modelfile_quote(c.value);
    }
    out += '\n';
  }
  return out;
}

namespace {

bool numeric_identifier(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return s.size() == 1 || s[0] != '0';
}

bool dotted_identifiers(std::string_view s, bool numeric_only_without_zeros) {
  if (s.empty()) return false;
  for (size_t start = 0;;) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty()) return false;
    bool all_digits =
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!std::all_of(part.begin(), part.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
        }))
      return false;
    if (numeric_only_without_zeros && all_digits && !numeric_identifier(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// golang.org/x/mod/semver's rules (after the caller added the "v"): vMAJOR[.MINOR[.PATCH]]
// with optional -prerelease and +build only when all three numbers are present.
bool valid_semver(std::string_view v) {
  if (!v.starts_with('v')) return false;
  v.remove_prefix(1);
  std::string_view core = v.substr(0, v.find_first_of("-+"));
  std::string_view rest = v.substr(core.size());
  int numbers = 0;
  for (size_t start = 0;;) {
    size_t dot = core.find('.', start);
    if (!numeric_identifier(core.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    ++numbers;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (numbers > 3) return false;
  if (rest.empty()) return true;
  if (numbers != 3) return false;
  std::string_view pre, build;
  if (rest.starts_with('-')) {
    size_t plus = rest.find('+');
    pre = rest.substr(1, plus == std::string_view::npos ? plus : plus - 1);
    if (!dotted_identifiers(pre, true)) return false;
    rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus);
  }
  if (rest.starts_with('+')) return dotted_identifiers(rest.substr(1), false);
  return rest.empty();
}

}  // namespace

ModelfileRequest Modelfile::to_request() const {
  ModelfileRequest r;
  std::vector<std::pair<std::string, std::string>> raw_params;
  for (const auto& c : commands) {
    if (c.name == "from") {
      r.from.push_back(c.value);
    } else if (c.name == "adapter") {
      r.adapters.push_back(c.value);
    } else if (c.name == "draft") {
      r.drafts.push_back(c.value);
    } else if (c.name == "template") {
      r.template_text = c.value;
    } else if (c.name == "system") {
      r.system = c.value;
    } else if (c.name == "renderer") {
      r.renderer = c.value;
    } else if (c.name == "parser") {
      r.parser = c.value;
    } else if (c.name == "license") {
      r.licenses.push_back(c.value);
    } else if (c.name == "message") {
      r.messages.emplace_back(c.key, c.value);
    } else if (c.name == "requires") {
      std::string v = c.value.starts_with('v') ? c.value : "v" + c.value;
      if (!valid_semver(v)) fail(c.line, "requires must be a valid semver (e.g. 0.14.0)");
      r.requires_version = v.substr(1);
    } else if (c.name == "parameter") {
      try {
        // Typed one at a time so an error names its line; stop lines accumulate below.
        auto typed = typed_parameters({{c.key, c.value}});
        for (const auto& [key, value] : typed.items()) {
          if (value.is_array() && r.parameters.contains(key) && r.parameters[key].is_array()) {
            for (const auto& element : value) r.parameters[key].push_back(element);
          } else {
            r.parameters[key] = value;
          }
        }
      } catch (const RegistryError& e) {
        fail(c.line, e.what());
      }
    }
  }
  return r;
}

}  // namespace vkllm::registry
