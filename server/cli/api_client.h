// The CLI's side of the HTTP API: requests to the server at OLLAMA_HOST (like the `ollama`
// client), NDJSON progress streams, and raw blob uploads. Synchronous; one connection per call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/http/host_address.h"

namespace vkllm::cli {

// A failed API call: the HTTP status (0 when the server could not be reached) and the
// server's "error" text (or the raw body).
class ApiError : public std::runtime_error {
 public:
  ApiError(unsigned status, const std::string& message)
      : std::runtime_error(message), status(status) {}
  unsigned status;
};

struct ApiResponse {
  unsigned status = 0;
  std::string body;
};

class ApiClient {
 public:
  explicit ApiClient(http::HostAddress host);

  // HEAD / ; throws ApiError(0, "could not connect to vkllm server at ..., run 'vkllm serve'
  // to start it") when nothing answers.
  void heartbeat();
  // Any request; the body (if any) is sent as JSON. Does not throw on HTTP error statuses.
  ApiResponse request(std::string_view method, std::string_view target,
                      const std::optional<nlohmann::json>& body = std::nullopt);
  // Like request() but throws ApiError for a non-2xx status.
  ApiResponse call(std::string_view method, std::string_view target,
                   const std::optional<nlohmann::json>& body = std::nullopt);
  // POSTs `body` and hands each NDJSON line to `on_line`; a line with "error" throws ApiError.
  void stream(std::string_view target, const nlohmann::json& body,
              const std::function<void(const nlohmann::json&)>& on_line);
  // POSTs a file's bytes (raw body) to `target`; `progress(sent, total)` after each piece.
  ApiResponse upload(std::string_view target, const std::filesystem::path& file,
                     const std::function<void(uint64_t, uint64_t)>& progress = {});

  const http::HostAddress& host() const { return host_; }

 private:
  http::HostAddress host_;
};

// The error text of an API answer: its JSON "error" member, else the body itself.
std::string error_text(const ApiResponse& r);

}  // namespace vkllm::cli
