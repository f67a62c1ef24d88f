// An error a generation request fails with, carrying the HTTP status Ollama answers it with
// (400 bad input, 404 unknown model, 500 engine or template failure, 503 busy). The API layer
// maps it to each API's error shape; the scheduler layer knows nothing of HTTP otherwise.
#pragma once

#include <stdexcept>
#include <string>

namespace vkllm::sched {

class RequestError : public std::runtime_error {
 public:
  RequestError(unsigned status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  unsigned status() const { return status_; }

 private:
  unsigned status_;
};

}  // namespace vkllm::sched
