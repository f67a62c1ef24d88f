// The one error a request fails with, as Ollama's api.StatusError: the HTTP status and the
// message a client reads. Route handlers, the HTTP layer, the scheduler's services and the model
// manager all throw it; the engine and the registry keep their own exception types, which
// error_reply.h turns into a status in one place. Which API's error shape the client gets
// (Ollama's, OpenAI's, Anthropic's) is decided there too, never where the error is thrown.
#pragma once

#include <stdexcept>
#include <string>

namespace vkllm::http {

class StatusError : public std::runtime_error {
 public:
  // `code`: OpenAI's machine-readable `code` ("invalid_api_key"); empty answers null.
  StatusError(unsigned status, const std::string& message, std::string code = {})
      : std::runtime_error(message), status_(status), message_(message), code_(std::move(code)) {}
  unsigned status() const noexcept { return status_; }
  // The whole message; what() stops at the first NUL, which a client-supplied name may hold.
  const std::string& message() const noexcept { return message_; }
  const std::string& code() const noexcept { return code_; }

 private:
  unsigned status_;
  std::string message_;
  std::string code_;
};

}  // namespace vkllm::http
