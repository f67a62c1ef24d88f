// The one exception type the registry library throws. Its kind tells the server which HTTP
// status to answer with, so callers never have to match on message text.
#pragma once

#include <stdexcept>
#include <string>

namespace vkllm::registry {

enum class ErrorKind {
  invalid_name,     // a model name that does not follow the grammar (400)
  invalid_digest,   // a digest that is not sha256:<64 lowercase hex> (400)
  invalid_input,    // any other malformed input: Modelfile, manifest, options (400)
  not_found,        // model, manifest or blob absent (404)
  digest_mismatch,  // bytes did not hash to the digest the caller promised (400)
  corrupt,          // stored data fails its own checks: bad seek table, frame checksum (500)
  io,               // the operating system refused: open, write, fsync, rename, SQLite (500)
};

class RegistryError : public std::runtime_error {
 public:
  RegistryError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind), message_(message) {}
  ErrorKind kind() const noexcept { return kind_; }
  // The whole message; what() stops at the first NUL, which a client-supplied name may hold.
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

}  // namespace vkllm::registry
