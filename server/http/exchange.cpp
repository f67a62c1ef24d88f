#include "server/http/exchange.h"

namespace vkllm::http {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string form_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 &&
               hex_digit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::string_view Exchange::path() const {
  const auto t = target();
  return t.substr(0, t.find('?'));
}

std::string_view Exchange::query() const {
  const auto t = target();
  const auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::optional<std::string> Exchange::query_param(std::string_view name) const {
  std::string_view q = query();
  while (!q.empty()) {
    const auto amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const auto eq = pair.find('=');
    if (form_decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string() : form_decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::string Exchange::param(std::string_view name) const {
  const auto it = params_.find(name);
  return it == params_.end() ? std::string() : it->second;
}

}  // namespace vkllm::http
