#include "registry/oci_challenge.h"
#include "registry/ascii_text.h"

namespace vkllm::registry {
namespace {

bool is_token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~/").find(c) != std::string_view::npos;
}

struct Cursor {
  std::string_view text;
  size_t pos = 0;

  bool done() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }
  void skip_space() {
    while (!done() && (peek() == ' ' || peek() == '\t')) ++pos;
  }
  std::string_view token() {
    size_t start = pos;
    while (!done() && is_token_char(peek())) ++pos;
    return text.substr(start, pos - start);
  }
  // A quoted-string (with backslash escapes) or a token; false when unterminated.
  bool value(std::string& out) {
    if (done()) return false;
    if (peek() != '"') {
      // Unquoted: be lenient (realms like https://r/t appear unquoted in the wild).
      size_t start = pos;
      while (!done() && peek() != ',' && peek() != ' ' && peek() != '\t') ++pos;
      out = std::string(text.substr(start, pos - start));
      return true;
    }
    ++pos;
    out.clear();
    while (!done()) {
      char c = text[pos++];
      if (c == '"') return true;
      if (c == '\\' && !done()) c = text[pos++];
      out += c;
    }
    return false;
  }
};

}  // namespace

std::vector<OciChallenge> parse_www_authenticate(std::string_view header) {
  std::vector<OciChallenge> challenges;
  Cursor cur{header};
  while (true) {
    cur.skip_space();
    while (!cur.done() && cur.peek() == ',') {
      ++cur.pos;
      cur.skip_space();
    }
    if (cur.done()) break;
    auto scheme = cur.token();
    if (scheme.empty()) break;
    OciChallenge challenge{ascii_lower(scheme), {}};
    // Parameters: name=value pairs separated by commas, until the next scheme token.
    while (true) {
      cur.skip_space();
      size_t save = cur.pos;
      auto name = cur.token();
      cur.skip_space();
      if (name.empty() || cur.done() || cur.peek() != '=') {
        cur.pos = save;  // the start of the next challenge (or junk)
        break;
      }
      ++cur.pos;
      cur.skip_space();
      std::string value;
      if (!cur.value(value)) {
        challenges.push_back(std::move(challenge));
        return challenges;
      }
      challenge.params[ascii_lower(name)] = std::move(value);
      cur.skip_space();
      if (!cur.done() && cur.peek() == ',') ++cur.pos;
    }
    challenges.push_back(std::move(challenge));
    if (!cur.done() && !is_token_char(cur.peek()) && cur.peek() != ',') break;
  }
  return challenges;
}

}  // namespace vkllm::registry
