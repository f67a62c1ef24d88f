#include "server/http/host_address.h"

#include <charconv>
#include <cstdlib>

#include <boost/asio/ip/address.hpp>

namespace vkllm::http {
namespace {

std::string_view trim(std::string_view s, std::string_view chars) {
  const auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(chars);
  return s.substr(first, last - first + 1);
}

bool is_ip(std::string_view s) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(s), ec);
  return !ec;
}

// Go's net.SplitHostPort: "host:port", "[v6]:port"; false when there is no port separator
// or an unbracketed host holds more than one colon.
bool split_host_port(std::string_view hostport, std::string& host, std::string& port) {
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return false;
    if (close + 1 >= hostport.size() || hostport[close + 1] != ':') return false;
    host = std::string(hostport.substr(1, close - 1));
    port = std::string(hostport.substr(close + 2));
    return port.find_first_of("[]") == std::string::npos;
  }
  const auto colon = hostport.rfind(':');
  if (colon == std::string_view::npos) return false;
  if (hostport.substr(0, colon).find(':') != std::string_view::npos) return false;
  host = std::string(hostport.substr(0, colon));
  port = std::string(hostport.substr(colon + 1));
  return host.find_first_of("[]") == std::string::npos;
}

}  // namespace

std::string HostAddress::host_port() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string HostAddress::client_host() const {
  if (host.empty() || host == "0.0.0.0" || host == "::") return "127.0.0.1";
  return host;
}

std::string HostAddress::base_url() const {
  HostAddress connect = *this;
  connect.host = client_host();
  std::string url = scheme + "://" + connect.host_port();
  if (!path.empty()) url += "/" + path;
  return url;
}

HostAddress parse_ollama_host(std::string_view value) {
  value = trim(trim(value, " \t\r\n\v\f"), "\"'");
  HostAddress out;
  uint16_t default_port = 11434;
  std::string_view hostport = value;
  if (const auto sep = value.find("://"); sep == std::string_view::npos) {
    out.scheme = "http";
    if (value == "ollama.com") {
      out.scheme = "https";
      hostport = "ollama.com:443";
    }
  } else {
    out.scheme = std::string(value.substr(0, sep));
    hostport = value.substr(sep + 3);
    if (out.scheme == "http") default_port = 80;
    if (out.scheme == "https") default_port = 443;
  }
  if (const auto slash = hostport.find('/'); slash != std::string_view::npos) {
    out.path = std::string(hostport.substr(slash + 1));
    hostport = hostport.substr(0, slash);
  }
  std::string host, port;
  if (!split_host_port(hostport, host, port)) {
    host = "127.0.0.1";
    port = std::to_string(default_port);
    const std::string_view bare = trim(hostport, "[]");
    if (is_ip(bare)) {
      host = std::string(bare);
    } else if (!hostport.empty()) {
      host = std::string(hostport);
    }
  }
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (ec != std::errc{} || end != port.data() + port.size() || n < 0 || n > 65535) {
    n = default_port;
  }
  out.host = host;
  if (is_ip(host)) out.host = boost::asio::ip::make_address(host).to_string();
  out.port = static_cast<uint16_t>(n);
  return out;
}

}  // namespace vkllm::http
