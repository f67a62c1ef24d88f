#include "registry/insecure_registries.h"
#include "registry/ascii_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace vkllm::registry {
namespace {

bool valid_port(std::string_view p) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  return ec == std::errc{} && end == p.data() + p.size() && v >= 1 && v <= 65535;
}

bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  return std::all_of(h.begin(), h.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':';
  });
}

// host[:port], [v6]:port or [v6]; empty port: any.
void split(std::string_view entry, std::string& host, std::string& port) {
  if (!entry.empty() && entry.front() == '[') {
    const auto close = entry.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("unclosed '['");
    host = entry.substr(1, close - 1);
    const auto rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw std::invalid_argument("text after ']'");
      port = rest.substr(1);
    }
    return;
  }
  const auto colon = entry.rfind(':');
  if (colon != std::string_view::npos && entry.find(':') == colon) {
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
  } else {
    host = entry;  // a name, IPv4, or a bare IPv6 address (several colons, no port)
  }
}

// A model name's host part: host[:port] as it was written.
void split_name_host(std::string_view text, std::string& host, std::string& port) {
  try {
    split(text, host, port);
  } catch (const std::invalid_argument&) {
    host = text;
  }
}

}  // namespace

InsecureRegistries InsecureRegistries::parse(std::string_view list) {
  InsecureRegistries out;
  size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const auto entry = ascii_trim(list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!entry.empty()) {
      Entry e;
      try {
        split(entry, e.host, e.port);
      } catch (const std::invalid_argument& why) {
        throw std::invalid_argument("insecure registry '" + std::string(entry) +
                                    "' is not host[:port]: " + why.what());
      }
      if (!valid_host(e.host) || (!e.port.empty() && !valid_port(e.port)) ||
          (entry.back() == ':')) {
        throw std::invalid_argument("insecure registry '" + std::string(entry) +
                                    "' is not host[:port]");
      }
      e.host = ascii_lower(e.host);
      out.entries_.push_back(std::move(e));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool InsecureRegistries::allows(const ModelName& name) const {
  std::string host, port;
  split_name_host(name.host, host, port);
  host = ascii_lower(host);
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.host == host && (e.port.empty() || e.port == port);
  });
}

}  // namespace vkllm::registry
