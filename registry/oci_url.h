// The small part of URL handling a registry client needs: absolute http(s) URLs, resolving a
// Location header against the request URL, query encoding, and "is this host loopback".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vkllm::registry {

struct OciUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // name or IP; IPv6 without brackets
  uint16_t port = 0;   // always set (80/443 by default)
  std::string target;  // path and query, starting with '/'

  // Parses "http[s]://host[:port][/path][?query]". Throws OciError(protocol) naming the URL
  // and what is wrong with it.
  static OciUrl parse(std::string_view text);
  // Resolves a Location header value (absolute, scheme-relative, absolute-path or relative
  // path) against this URL.
  OciUrl resolve(std::string_view location) const;

  // host[:port] as the Host header wants it (port omitted when default, IPv6 bracketed).
  std::string authority() const;
  std::string str() const { return scheme + "://" + authority() + target; }
  // Same scheme, host and port: credentials for one may be sent to the other.
  bool same_origin(const OciUrl& other) const;
  // Appends "name=value" (value percent-encoded) to the query.
  void add_query(std::string_view name, std::string_view value);
};

// Percent-encodes everything except RFC 3986 unreserved characters.
std::string percent_encode(std::string_view text);
// "localhost", 127.0.0.0/8 and ::1 (with or without brackets or a port).
bool is_loopback_host(std::string_view host_and_port);

}  // namespace vkllm::registry
