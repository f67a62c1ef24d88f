#include "server/http/api_key_policy.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace vkllm::http {

namespace {

std::array<unsigned char, 32> digest(std::string_view s) {
  std::array<unsigned char, 32> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

ApiKeyPolicy::ApiKeyPolicy(const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    if (!k.empty()) digests_.push_back(digest(k));
  }
}

bool ApiKeyPolicy::matches(std::string_view key) const {
  const auto d = digest(key);
  bool ok = false;
  for (const auto& k : digests_) ok |= CRYPTO_memcmp(k.data(), d.data(), d.size()) == 0;
  return ok;
}

bool ApiKeyPolicy::allows(std::string_view method, std::string_view path,
                          const std::optional<std::string>& authorization,
                          const std::optional<std::string>& x_api_key) const {
  if (!enabled()) return true;
  const bool read = method == "GET" || method == "HEAD";
  // Liveness, the orchestrator's probes (they carry no key and their answers name no model),
  // and the web UI's static files (they hold no data; the UI asks for the key when the API
  // answers 401).
  if (read && (path == "/" || path == "/livez" || path == "/readyz" || path == "/ui" ||
               path.rfind("/ui/", 0) == 0)) {
    return true;
  }
  if (authorization) {
    std::string_view a = *authorization;
    constexpr std::string_view kBearer = "Bearer ";
    if (a.size() > kBearer.size() &&
        std::equal(kBearer.begin(), kBearer.end(), a.begin(),
                   [](char x, char y) { return std::tolower(x) == std::tolower(y); })) {
      if (matches(trim(std::string(a.substr(kBearer.size()))))) return true;
    }
  }
  return x_api_key && matches(trim(*x_api_key));
}

StatusError ApiKeyPolicy::unauthorized(ErrorShape shape) {
  switch (shape) {
    case ErrorShape::anthropic:
      return StatusError(
          401,
          "invalid x-api-key: send the server's VKLLM_API_KEY as 'x-api-key: KEY' or "
          "'Authorization: Bearer KEY'");
    case ErrorShape::openai:
      return StatusError(
          401,
          "Incorrect or missing API key. Send it as 'Authorization: Bearer KEY' (the "
          "server's VKLLM_API_KEY).",
          "invalid_api_key");
    case ErrorShape::ollama:
      break;
  }
  return StatusError(401, "unauthorized: missing or incorrect API key (Authorization: Bearer KEY)");
}

}  // namespace vkllm::http
