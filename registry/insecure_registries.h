// Registries that may be reached over plain HTTP, as Docker's insecure-registries setting
// allows (VKLLM_INSECURE_REGISTRIES=host[:port],...): an in-cluster registry without TLS, for
// example. Loopback registries are plain HTTP anyway (oci_repository); a request's own
// `insecure` flag still works for any registry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "registry/model_name.h"

namespace vkllm::registry {

class InsecureRegistries {
 public:
  InsecureRegistries() = default;
  // Comma-separated host[:port] entries (blanks around them ignored, empty list allowed). An
  // entry with a port matches that host and port; one without matches the host on any port.
  // Hosts compare case-insensitively. Throws std::invalid_argument naming an entry that is not
  // host[:port] (a scheme, a path, blanks inside, a bad port).
  static InsecureRegistries parse(std::string_view list);

  // Whether pulls and pushes of `name` may use plain HTTP.
  bool allows(const ModelName& name) const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string host;  // lower case; IPv6 without brackets
    std::string port;  // empty: any
  };
  std::vector<Entry> entries_;
};

}  // namespace vkllm::registry
