#include "registry/oci_url.h"

#include <charconv>

#include "registry/ascii_text.h"
#include "registry/oci_error.h"

namespace vkllm::registry {
namespace {

[[noreturn]] void bad_url(std::string_view url, const std::string& why) {
  throw OciError(OciErrorKind::protocol, "invalid URL \"" + std::string(url) + "\": " + why);
}

uint16_t default_port(std::string_view scheme) {
  return scheme == "https" ? 443 : 80;
}

// Splits "host[:port]" / "[v6][:port]" into its parts.
void split_authority(std::string_view url, std::string_view authority, std::string& host,
                     std::optional<uint16_t>& port) {
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) bad_url(url, "unterminated IPv6 address");
    host = std::string(authority.substr(1, close - 1));
    auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') bad_url(url, "unexpected text after IPv6 address");
      port_text = rest.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = std::string(authority.substr(0, colon));
      port_text = authority.substr(colon + 1);
    } else {
      host = std::string(authority);
    }
  }
  if (host.empty()) bad_url(url, "empty host");
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '@' || c == '?' || c == '#') {
      bad_url(url, "bad character in host");
    }
  }
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      bad_url(url, "bad port \"" + std::string(port_text) + "\"");
    }
    port = static_cast<uint16_t>(value);
  }
}

}  // namespace

OciUrl OciUrl::parse(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos) bad_url(text, "no scheme");
  OciUrl url;
  url.scheme = ascii_lower(text.substr(0, sep));
  if (url.scheme != "http" && url.scheme != "https") {
    bad_url(text, "scheme must be http or https");
  }
  auto rest = text.substr(sep + 3);
  auto path_start = rest.find_first_of("/?#");
  auto authority = rest.substr(0, path_start);
  if (authority.find('@') != std::string_view::npos) bad_url(text, "user info is not supported");
  std::optional<uint16_t> port;
  split_authority(text, authority, url.host, port);
  url.host = ascii_lower(url.host);
  url.port = port.value_or(default_port(url.scheme));
  std::string_view target = path_start == std::string_view::npos ? "" : rest.substr(path_start);
  if (auto hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (target.empty() || target.front() != '/') url.target = '/';
  url.target.append(target);
  for (char c : url.target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) bad_url(text, "control character");
  }
  return url;
}

OciUrl OciUrl::resolve(std::string_view location) const {
  if (location.empty()) bad_url(location, "empty Location");
  if (location.find("://") != std::string_view::npos &&
      location.find("://") < location.find_first_of("/?")) {
    return parse(location);
  }
  if (location.starts_with("//")) return parse(scheme + ":" + std::string(location));
  OciUrl out = *this;
  if (location.front() == '/') {
    out.target = std::string(location);
  } else {
    auto path = target.substr(0, target.find('?'));
    out.target = path.substr(0, path.rfind('/') + 1) + std::string(location);
  }
  for (char c : out.target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) bad_url(location, "control character");
  }
  return out;
}

std::string OciUrl::authority() const {
  std::string out;
  if (host.find(':') != std::string::npos) {
    out.append("[").append(host).append("]");
  } else {
    out = host;
  }
  if (port != default_port(scheme)) out.append(":").append(std::to_string(port));
  return out;
}

bool OciUrl::same_origin(const OciUrl& other) const {
  return scheme == other.scheme && host == other.host && port == other.port;
}

void OciUrl::add_query(std::string_view name, std::string_view value) {
  target += target.find('?') == std::string::npos ? '?' : '&';
  target += percent_encode(name);
  target += '=';
  target += percent_encode(value);
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool is_loopback_host(std::string_view host_and_port) {
  if (host_and_port == "::1") return true;
  std::string host;
  std::optional<uint16_t> port;
  try {
    split_authority(host_and_port, host_and_port, host, port);
  } catch (const OciError&) {
    return false;
  }
  host = ascii_lower(host);
  if (host == "localhost" || host == "::1") return true;
  if (host.starts_with("127.")) {
    int dots = 0;
    for (char c : host) {
      if (c == '.') {
        ++dots;
      } else if (c < '0' || c > '9') {
        return false;
      }
    }
    return dots == 3;
  }
  return false;
}

}  // namespace vkllm::registry
