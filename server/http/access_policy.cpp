#include "server/http/access_policy.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>

#include <boost/asio/ip/address.hpp>

#include "server/http/host_address.h"

namespace vkllm::http {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

constexpr std::array<std::string_view, 6> kOriginSchemes = {"http://",
                                                            "https://",
                                                            "chrome-extension://",
                                                            "safari-extension://",
                                                            "moz-extension://",
                                                            "ms-browser-extension://"};

std::vector<std::string> default_origins() {
  std::vector<std::string> out;
  for (const char* host : {"localhost", "127.0.0.1", "0.0.0.0"}) {
    for (const char* scheme : {"http://", "https://"}) out.push_back(std::string(scheme) + host);
    for (const char* scheme : {"http://", "https://"}) {
      out.push_back(std::string(scheme) + host + ":*");
    }
  }
  for (const char* o :
       {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"})
    out.emplace_back(o);
  return out;
}

// Strips a ":port" (or "[v6]:port") the way Go's net.SplitHostPort would, keeping the host.
std::string host_without_port(std::string_view host_header) {
  if (!host_header.empty() && host_header.front() == '[') {
    const auto close = host_header.find(']');
    if (close != std::string_view::npos) return std::string(host_header.substr(1, close - 1));
    return std::string(host_header);
  }
  const auto colon = host_header.rfind(':');
  if (colon != std::string_view::npos && host_header.find(':') == colon) {
    return std::string(host_header.substr(0, colon));
  }
  return std::string(host_header);
}

bool is_private(const boost::asio::ip::address& a) {
  if (a.is_v4()) {
    const auto b = a.to_v4().to_bytes();
    return b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168);
  }
  const auto b = a.to_v6().to_bytes();
  return (b[0] & 0xfe) == 0xfc;  // unique local fc00::/7
}

std::vector<std::string> machine_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      boost::asio::ip::address_v4::bytes_type bytes;
      std::copy_n(reinterpret_cast<const unsigned char*>(&sin->sin_addr), 4, bytes.begin());
      out.push_back(boost::asio::ip::address_v4(bytes).to_string());
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      boost::asio::ip::address_v6::bytes_type bytes;
      std::copy_n(reinterpret_cast<const unsigned char*>(&sin6->sin6_addr), 16, bytes.begin());
      out.push_back(boost::asio::ip::address_v6(bytes).to_string());
    }
  }
  freeifaddrs(list);
  return out;
}

std::string machine_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return lower(buf);
}

}  // namespace

OriginPolicy::OriginPolicy(const std::vector<std::string>& extra) {
  std::vector<std::string> all;
  for (const auto& e : extra) {
    std::string_view v = e;
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    if (!v.empty()) all.push_back(lower(v));
  }
  for (auto& d : default_origins()) all.push_back(std::move(d));
  for (const auto& origin : all) {
    if (origin == "*") {
      allow_all_ = true;
      continue;
    }
    const auto star = origin.find('*');
    if (star == std::string::npos) {
      const bool has_scheme =
          std::any_of(kOriginSchemes.begin(), kOriginSchemes.end(),
                      [&](std::string_view s) { return starts_with(origin, s); });
      if (!has_scheme) {
        throw std::invalid_argument("OLLAMA_ORIGINS: bad origin \"" + origin +
                                    "\": origins must contain '*' or start with http://, "
                                    "https://, chrome-extension://, safari-extension://, "
                                    "moz-extension:// or ms-browser-extension://");
      }
      patterns_.push_back({origin, "", false});
      continue;
    }
    if (origin.find('*', star + 1) != std::string::npos) {
      throw std::invalid_argument("OLLAMA_ORIGINS: bad origin \"" + origin +
                                  "\": only one '*' is allowed");
    }
    patterns_.push_back({origin.substr(0, star), origin.substr(star + 1), true});
  }
}

bool OriginPolicy::allows(std::string_view origin_in) const {
  if (allow_all_) return true;
  const std::string origin = lower(origin_in);
  for (const auto& p : patterns_) {
    if (!p.wildcard) {
      if (origin == p.prefix) return true;
    } else if (origin.size() >= p.prefix.size() + p.suffix.size() &&
               starts_with(origin, p.prefix) && ends_with(origin, p.suffix)) {
      return true;
    }
  }
  return false;
}

bool is_cross_origin(std::string_view origin, std::string_view host_header) {
  if (origin.empty()) return false;
  const std::string o = lower(origin), h = lower(host_header);
  return o != "http://" + h && o != "https://" + h;
}

HostPolicy::HostPolicy() : HostPolicy(machine_hostname(), machine_addresses()) {}

HostPolicy::HostPolicy(std::string machine_hostname, std::vector<std::string> local_addresses)
    : hostname_(lower(machine_hostname)), local_addresses_(std::move(local_addresses)) {}

bool HostPolicy::allows(std::string_view host_header) const {
  const std::string host = lower(host_without_port(host_header));
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(host, ec);
  if (!ec) {
    if (addr.is_loopback() || addr.is_unspecified() || is_private(addr)) return true;
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
      const auto v4 = addr.to_v6().to_v4();
      if (v4.is_loopback() || v4.is_unspecified() || is_private(v4)) return true;
    }
    for (const auto& local : local_addresses_) {
      const auto l = boost::asio::ip::make_address(local, ec);
      if (!ec && l == addr) return true;
    }
    return false;
  }
  if (host.empty() || host == "localhost") return true;
  if (!hostname_.empty() && host == hostname_) return true;
  for (std::string_view tld : {".localhost", ".local", ".internal"}) {
    if (ends_with(host, tld)) return true;
  }
  return false;
}

}  // namespace vkllm::http
