// Who may talk to the server: CORS origins (OLLAMA_ORIGINS plus Ollama's built-in list) and the
// Host-header check that guards a loopback listener against DNS rebinding (compat §7.2).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::http {

class OriginPolicy {
 public:
  // Ollama's defaults (localhost, 127.0.0.1 and 0.0.0.0 over http/https with any port, and the
  // app://, file://, tauri://, vscode-webview://, vscode-file:// schemes) after `extra`.
  // Throws std::invalid_argument for an entry Ollama would refuse to start with: more than one
  // '*', or no '*' and no http(s)/browser-extension scheme.
  explicit OriginPolicy(const std::vector<std::string>& extra = {});

  bool allows_all() const { return allow_all_; }
  bool allows(std::string_view origin) const;  // case-insensitive

 private:
  struct Pattern {
    std::string prefix, suffix;
    bool wildcard = false;
  };
  std::vector<Pattern> patterns_;
  bool allow_all_ = false;
};

// The CORS headers Ollama sends on a preflight (OPTIONS) answer, and the Anthropic SDK's.
inline constexpr std::string_view kCorsAllowMethods = "GET,POST,PUT,PATCH,DELETE,HEAD";
inline constexpr std::string_view kCorsAllowHeaders =
    "Authorization,Content-Type,User-Agent,Accept,X-Requested-With,Openai-Beta,X-Stainless-Arch,"
    "X-Stainless-Async,X-Stainless-Custom-Poll-Interval,X-Stainless-Helper-Method,"
    "X-Stainless-Lang,X-Stainless-Os,X-Stainless-Package-Version,X-Stainless-Poll-Helper,"
    "X-Stainless-Retry-Count,X-Stainless-Runtime,X-Stainless-Runtime-Version,X-Stainless-Timeout,"
    // The Anthropic SDK's (vkllm's /v1/messages; not in Ollama's list).
    "X-Api-Key,Anthropic-Version,Anthropic-Beta,Anthropic-Dangerous-Direct-Browser-Access";
inline constexpr std::string_view kCorsMaxAge = "43200";

// A request is cross-origin only when it carries an Origin that is not http(s)://<Host>.
bool is_cross_origin(std::string_view origin, std::string_view host_header);

class HostPolicy {
 public:
  // `machine_hostname` and `local_addresses` default to the machine's (gethostname, getifaddrs).
  HostPolicy();
  HostPolicy(std::string machine_hostname, std::vector<std::string> local_addresses);

  // Only listeners bound to loopback check Host at all.
  // Allowed: empty, localhost, the machine's hostname, *.localhost / *.local / *.internal, or
  // an IP literal that is loopback, private, unspecified or one of the machine's addresses.
  bool allows(std::string_view host_header) const;

 private:
  std::string hostname_;
  std::vector<std::string> local_addresses_;
};

}  // namespace vkllm::http
