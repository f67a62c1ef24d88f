// Optional API keys (Ollama refuses to build them in): with VKLLM_API_KEY set to a key, or to
// @FILE naming a file with one key per line, every request but the liveness check, the probes
// (/livez, /readyz) and the web UI's static files must carry `Authorization: Bearer KEY` (or
// `x-api-key: KEY`). Keys are compared in constant time (SHA-256 of both sides, then
// CRYPTO_memcmp), so timing reveals nothing about a key. Unset, nothing changes.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/error_reply.h"

namespace vkllm::http {

class ApiKeyPolicy {
 public:
  ApiKeyPolicy() = default;
  explicit ApiKeyPolicy(const std::vector<std::string>& keys);

  bool enabled() const { return !digests_.empty(); }
  // Whether a request to `path` with these headers may proceed.
  bool allows(std::string_view method, std::string_view path,
              const std::optional<std::string>& authorization,
              const std::optional<std::string>& x_api_key) const;
  // The 401 a refused request answers, its message telling the clients of `shape` how to send a
  // key (the body is made in that shape by error_reply.h).
  static StatusError unauthorized(ErrorShape shape);

 private:
  bool matches(std::string_view key) const;
  std::vector<std::array<unsigned char, 32>> digests_;
};

}  // namespace vkllm::http
