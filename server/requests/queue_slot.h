// A request's place among those waiting for their sequence to start (OLLAMA_MAX_QUEUE, as
// Ollama counts them): taken before the model is acquired, given back when the first token
// arrives or the request ends, whichever comes first.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/http/status_error.h"

namespace vkllm::requests {

class QueueSlot {
 public:
  // Throws http::StatusError 503 with Ollama's text when `max` requests already wait.
  QueueSlot(std::atomic<uint32_t>& waiting, uint32_t max) : waiting_(&waiting) {
    uint32_t n = waiting.load();
    do {
      if (n >= max) {
        throw http::StatusError(
            503, "server busy, please try again.  maximum pending requests exceeded");
      }
    } while (!waiting.compare_exchange_weak(n, n + 1));
  }
  ~QueueSlot() { release(); }
  QueueSlot(const QueueSlot&) = delete;
  QueueSlot& operator=(const QueueSlot&) = delete;

  void release() {
    if (waiting_) waiting_->fetch_sub(1);
    waiting_ = nullptr;
  }

 private:
  std::atomic<uint32_t>* waiting_;
};

}  // namespace vkllm::requests
