// Parsing of WWW-Authenticate challenges (RFC 7235) as registries send them, e.g.
//   Bearer
//   realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::registry {

struct OciChallenge {
  std::string scheme;                         // lower-case: "bearer", "basic"
  std::map<std::string, std::string> params;  // keys lower-case, values unquoted

  std::string param(const std::string& key) const {
    auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  }
};

// Every challenge in the header value (a header may list several, comma-separated). Malformed
// input yields what could be read before the error, never an exception.
std::vector<OciChallenge> parse_www_authenticate(std::string_view header);

}  // namespace vkllm::registry
