// Errors of the OCI distribution client. The message is what a user should see; kind() and
// status() let callers (pull, push, the server) react without matching on text.
#pragma once

#include <stdexcept>
#include <string>

namespace vkllm::registry {

enum class OciErrorKind {
  transport,     // DNS, connect, TLS, timeouts, a connection that broke mid-transfer
  http,          // the registry answered with an unexpected status (status() tells which)
  unauthorized,  // still 401/403 after authenticating ("unauthorized: access denied")
  protocol,      // a malformed answer: bad Location, token response, oversized body
  cancelled,     // the caller's stop token was triggered
};

class OciError : public std::runtime_error {
 public:
  OciError(OciErrorKind kind, const std::string& message, unsigned status = 0,
           std::string body = {})
      : std::runtime_error(message), kind_(kind), status_(status), body_(std::move(body)) {}

  OciErrorKind kind() const noexcept { return kind_; }
  // The HTTP status of the answer that failed, 0 when there was none.
  unsigned status() const noexcept { return status_; }
  // The answer's body (trimmed, at most a few KiB), for registries that explain errors there.
  const std::string& body() const noexcept { return body_; }

 private:
  OciErrorKind kind_;
  unsigned status_;
  std::string body_;
};

}  // namespace vkllm::registry
